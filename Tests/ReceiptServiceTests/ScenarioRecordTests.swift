import AppStoreSimulator
import DatabaseEngine
import Foundation
import GooglePlaySimulator
import ReceiptCore
import ReceiptService
import ReceiptTesting
import Storage
import Testing
import Webhooks
import Workers

/// What receiptd answers for every scenario its simulators play, byte for byte: each POST's answer,
/// each subscriber's document (plain, explained, after the clock has moved), events, the webhook
/// messages written and every chart with a drill-down. The record is checked in
/// (`Recorded/scenarios.txt`); a refactoring that changes behaviour changes a byte of it.
/// `RECEIPTD_RECORD=1 swift test --filter ScenarioRecordTests` writes it again (read its diff).
@Suite("Every scenario's answers, as recorded", .serialized)
struct ScenarioRecordTests {
    static let record = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Recorded/scenarios.txt")

    /// Notification ids Apple makes up at random (`notificationUUID`) and the process's request
    /// ids are the only bytes that differ between runs; they are written as their order of first
    /// appearance, and `request-id`.
    static func stable(_ text: String) -> String {
        var seen: [String: String] = [:]
        var out = text.replacing(/"request_id":"[0-9a-f]+-[0-9a-f]+"/, with: #""request_id":"request-id""#)
        let uuid = /[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}/
        for match in out.matches(of: uuid) {
            let id = String(match.output)
            if seen[id] == nil { seen[id] = "uuid-\(seen.count + 1)" }
        }
        for (id, name) in seen { out = out.replacingOccurrences(of: id, with: name) }
        return out
    }

    @Test func everyScenarioAnswersAsRecorded() async throws {
        let configured = { (path: String) in
            var c = testConfiguration(
                path: path, signedData: .init(roots: [TestPKI.root], appAppleIDs: [1_234_567_890]), googlePlay: true)
            c.webhooks = WebhookSettings(endpoints: [
                WebhookEndpoint(name: "crm", url: "http://127.0.0.1:1/hook", secrets: ["whsec-record-0123456789"])
            ])
            c.webhooks.allowHTTP = true
            return c
        }
        var transcript = ""
        func note(_ label: String, _ reply: Reply) {
            transcript += "### \(label) → \(reply.status)\n\(reply.body)\n"
        }
        try await withClockedService(configuration: configured) { app, port, db, clock in
            let apple = try #require(app.appStore)
            let google = try #require(app.googlePlay)
            var users: [String] = []
            // verifyReceipt, every scenario (errors too: their status and code are behaviour).
            for scenario in Scenario.allCases {
                let user = "a-\(scenario.rawValue)"
                note("POST receipt \(scenario.rawValue)", try await postReceipt(port, user: user, "\(scenario.rawValue):a"))
                users.append(user)
            }
            // StoreKit 2: a transaction id through the Server API.
            for scenario in [Scenario.activeMonthly, .upgraded, .refunded, .familyShared, .consumable, .commitment] {
                let user = "s-\(scenario.rawValue)"
                let bought = apple.purchase(scenario, tag: "s")
                note(
                    "POST transaction_id \(scenario.rawValue)",
                    try await postReceipts(
                        port, #"{"app_user_id":"\#(user)","transaction_id":"\#(bought.transactionID)"}"#,
                        key: TestSecrets.secretKey))
                users.append(user)
                if scenario == .activeMonthly {
                    for (type, subtype) in [("DID_RENEW", nil), ("DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_DISABLED")] {
                        let signed = try #require(apple.notification(type, subtype: subtype, transactionID: bought.transactionID))
                        note(
                            "POST Apple notification \(type)",
                            try await post(port, "/v1/notifications/apple", #"{"signedPayload":"\#(signed)"}"#))
                    }
                }
            }
            // Google Play: every scenario's token, then a notification.
            for scenario in PlayScenario.allCases {
                let user = "g-\(scenario.rawValue)"
                let token = google.purchase(scenario, tag: "g")
                note(
                    "POST Play token \(scenario.rawValue)",
                    try await postReceipts(
                        port,
                        #"{"app_user_id":"\#(user)","store":"play_store","package_name":"com.example.app","purchase_token":"\#(token)"}"#
                    ))
                users.append(user)
                if scenario == .active {
                    let push = try #require(google.push(token, type: 3))
                    note(
                        "POST Play notification",
                        try await post(
                            port, "/v1/notifications/google", String(decoding: push.body, as: UTF8.self),
                            key: String(push.authorization.dropFirst("Bearer ".count))))
                }
            }
            await app.background.idle()
            func documents(_ moment: String) async throws {
                for user in users {
                    note("GET \(user) \(moment)", try await subscriber(port, user, "?explain=true"))
                }
            }
            try await documents("at once")
            for user in users { note("GET \(user) events", try await subscriber(port, user, "/events")) }
            // Forty days on: every document derived again from the stored facts.
            clock.advance(by: 40 * 86_400_000)
            try await documents("forty days on")
            for chart in [
                "revenue", "mrr", "actives", "trials", "trial_conversion", "churn", "refund_rate", "cohorts", "mrr_movement",
                "actives_movement", "trials_movement", "new_customers", "initial_conversion", "conversion_to_paying",
                "new_paid_subscriptions", "non_subscription_purchases", "ltv_per_customer", "ltv_per_paying_customer",
                "subscription_retention", "subscription_status", "refund_requests",
            ] {
                let query = "from=2026-09-01&to=2026-11-01&resolution=month&currency=USD"
                note("GET chart \(chart)", try await get(port, "/v1/admin/charts/\(chart)?\(query)", key: TestSecrets.secretKey))
            }
            let drill = "/v1/admin/charts/revenue/drill?from=2026-09-01&to=2026-11-01&resolution=month&period=2026-09-01"
            note("GET drill revenue gross", try await get(port, drill + "&measure=gross", key: TestSecrets.secretKey))
            // Every message in full, but for the thousand renewals of `long_history`: its first
            // and last three, and how many.
            let messages = try TestDatabase.open(db).prepare(
                "SELECT id, app_user_id, type, body FROM webhook_messages ORDER BY app_user_id, version, id")
            var long: [String] = []
            while try messages.step() {
                let entry =
                    "### webhook \(messages.text(0) ?? "") \(messages.text(1) ?? "") \(messages.text(2) ?? "")\n"
                    + (messages.text(3) ?? "") + "\n"
                if messages.text(1) == "a-long_history" { long.append(entry) } else { transcript += entry }
            }
            transcript += "### webhooks of a-long_history: \(long.count)\n"
            transcript += (long.prefix(3) + long.suffix(3)).joined()
        }
        let recorded = Self.stable(transcript)
        if ProcessInfo.processInfo.environment["RECEIPTD_RECORD"] == "1" {
            try FileManager.default.createDirectory(
                at: Self.record.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(recorded.utf8).write(to: Self.record)
            return
        }
        let expected = try String(contentsOf: Self.record, encoding: .utf8)
        guard expected != recorded else { return }
        let mine = recorded.split(separator: "\n", omittingEmptySubsequences: false)
        let theirs = expected.split(separator: "\n", omittingEmptySubsequences: false)
        let first = (0..<min(mine.count, theirs.count)).first { mine[$0] != theirs[$0] } ?? min(mine.count, theirs.count)
        let actual = NSTemporaryDirectory() + "scenarios.actual.txt"
        try? Data(recorded.utf8).write(to: URL(fileURLWithPath: actual))
        Issue.record(
            """
            line \(first + 1) differs from the record (whole answer in \(actual)):
            recorded: \(first < theirs.count ? theirs[first] : "(end)")
            now:      \(first < mine.count ? mine[first] : "(end)")
            """)
    }
}
