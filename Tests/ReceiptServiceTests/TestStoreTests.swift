import DatabaseEngine
import Foundation
import ReceiptCore
import ReceiptService
import ReceiptTesting
import Storage
import Testing
import Webhooks

/// A third store wired through the seam Apple and Google use, from the request to the webhook:
/// ``TestStore`` and this file are all it takes (issue 58, item 7).
@Suite("A store plugged in through the seam", .serialized)
struct TestStoreTests {
    static func configuration(_ path: String) -> ServiceConfiguration {
        var c = testConfiguration(path: path)
        c.webhooks = WebhookSettings(endpoints: [
            WebhookEndpoint(name: "crm", url: "http://127.0.0.1:1/hook", secrets: ["whsec-test-store-0123456789"])
        ])
        c.webhooks.allowHTTP = true
        return c
    }

    static func body(_ user: String, _ code: String) -> String {
        #"{"app_user_id":"\#(user)","store":"test_store","code":"\#(code)"}"#
    }

    @Test func aPurchaseOfAThirdStoreTakesTheRoadToTheDocumentEventsAndWebhooks() async throws {
        let clock = TestClock()
        try await withClockedService(configuration: Self.configuration, clock: clock, stores: [TestStore(clock: clock.wall)]) {
            app, port, db, _ in
            // Verified by the store, stored, derived: the document names the store and what it grants.
            let posted = try await postReceipts(port, Self.body("tess", "monthly.t1"))
            #expect(posted.status == 200, "\(posted.body)")
            let subscription = (posted.json["subscriptions"] as? [String: Any])?["monthly"] as? [String: Any]
            #expect(subscription?["store"] as? String == "test_store")
            #expect(entitlement(posted.json, "premium")?["active"] as? Bool == true)
            // Explained in the store's own words (its rules are data).
            let explained = try await subscriber(port, "tess", "?explain=true")
            #expect(explained.body.contains("Granted by the Test Store subscription of monthly (ts-t1)"), "\(explained.body)")
            // Its events say which store, and a webhook message waits for each.
            let events = try await subscriber(port, "tess", "/events")
            let kinds = (events.json["events"] as? [[String: Any]] ?? []).map { $0["type"] as? String }
            #expect(kinds == ["initial_purchase"], "\(events.body)")
            #expect(events.body.contains(#""store":"test_store""#))
            let database = try TestDatabase.open(db)
            #expect(try database.scalarText("SELECT type FROM webhook_messages WHERE app_user_id = 'tess'") == "initial_purchase")
            // An app's answer names what its claim proved; the same rules as every store's.
            let other = try await postReceipts(port, Self.body("tess", "lifetime.t2"))
            #expect(other.status == 200 && other.body.contains("ts-t2") && !other.body.contains("ts-t1"), "\(other.body)")
            // Stored facts read back with the store's rules, and its mapping states them again.
            let report = try Rederivation(
                settings: app.configuration.entitlementSettings, plugged: [TestStore.store: TestStore(clock: clock.wall).mapping]
            ).run(database, now: clock.now, dryRun: true)
            #expect(report.transactions == 0 && report.unreadable == 0 && report.versionsBumped == 0, "\(report)")
        }
    }

    @Test func theTableOfStoresReadsEveryStoresFieldsAndItsFailures() async throws {
        let clock = TestClock()
        try await withClockedService(configuration: Self.configuration, clock: clock, stores: [TestStore(clock: clock.wall)]) {
            _, port, _, _ in
            let unknown = try await postReceipts(port, #"{"app_user_id":"u","store":"amazon","code":"x.y"}"#)
            #expect(unknown.status == 400 && unknown.errorCode == "invalid_request")
            #expect(unknown.body.contains("`app_store` (the default), `play_store` or `test_store`"), "\(unknown.body)")
            let missing = try await postReceipts(port, #"{"app_user_id":"u","store":"test_store"}"#)
            #expect(missing.status == 400 && missing.body.contains("`code` is required"), "\(missing.body)")
            // A store that cannot answer: its own code, the person's last known document, stored nothing.
            #expect(try await postReceipts(port, Self.body("dana", "monthly.d1")).status == 200)
            let down = try await postReceipts(port, Self.body("dana", "down.d2"))
            #expect(down.status == 503 && down.errorCode == "test_store_unavailable", "\(down.body)")
            #expect(down.body.contains("The Test Store could not answer now"), "\(down.body)")
            // A bare id from an app never moves what someone else holds; the device's proof and a
            // backend's key may (the ownership policy here: transfer).
            let bare = #"{"app_user_id":"eve","store":"test_store","code":"monthly.d1","bare":true}"#
            let refused = try await postReceipts(port, bare)
            #expect(refused.status == 409 && refused.errorCode == "proof_required", "\(refused.body)")
            #expect(try await postReceipts(port, bare, key: TestSecrets.secretKey).status == 200)
            #expect(try await postReceipts(port, Self.body("dana", "monthly.d1")).status == 200)
        }
    }
}
