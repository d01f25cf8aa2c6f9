import AppStoreSimulator
import DatabaseEngine
import Entitlements
import Foundation
import ReceiptCore
import ReceiptService
import ReceiptTesting
import Storage
import Testing
import Webhooks

/// DELETE /v1/subscribers/{id}: the erasure route end to end.
@Suite("Erasing a subscriber over the API")
struct SubscriberErasureTests {
    @Test func deleteErasesTheSubscriberAndOnlyThemAndSaysSoOnce() async throws {
        try await withService { port, path async throws in
            #expect(try await postReceipt(port, user: "ann", "active_monthly:ann-erase").status == 200)
            #expect(try await postReceipt(port, user: "bob", "active_monthly:bob-keep").status == 200)
            #expect(try await subscriber(port, "ann").status == 200)  // cached now
            let bobBefore = try await subscriber(port, "bob")

            let publicKey = try await request(port, "DELETE", "/v1/subscribers/ann", key: TestSecrets.publicKey)
            #expect(publicKey.status == 403)
            let erased = try await request(port, "DELETE", "/v1/subscribers/ann", key: TestSecrets.secretKey)
            #expect(erased.status == 200, "\(erased.body)")
            #expect(erased.json["erased"] as? Bool == true && (erased.json["rows"] as? Int ?? 0) > 5)

            let after = try await subscriber(port, "ann")
            #expect(after.status == 404 && after.errorCode == "subscriber_not_found")
            let again = try await request(port, "DELETE", "/v1/subscribers/ann", key: TestSecrets.secretKey)
            #expect(again.status == 404 && again.errorCode == "subscriber_not_found")
            let bobAfter = try await subscriber(port, "bob")
            #expect(bobAfter.json["version"] as? Int == bobBefore.json["version"] as? Int)
            #expect((bobAfter.json["entitlements"] as? NSDictionary) == (bobBefore.json["entitlements"] as? NSDictionary))

            // One audit row: by a key's fingerprint, never the key; nothing of ann's anywhere.
            let db = try TestDatabase.open(path)
            #expect(try db.scalarInt("SELECT count(*) FROM erasures") == 1)
            let by = try db.scalarText("SELECT by_key FROM erasures") ?? ""
            #expect(by.hasPrefix("key:") && by.count == 16 && !by.contains(TestSecrets.secretKey))
            #expect(try db.scalarInt("SELECT count(*) FROM subscribers WHERE app_user_id = 'ann'") == 0)
            #expect(try db.scalarInt("SELECT count(*) FROM latest_receipts") == 1)
        }
    }

    /// Issue 57: someone known only by rows of their id (here, a refused verification) has
    /// no subscriber row, and is exported and erased all the same.
    @Test func aPersonWithNoSubscriberRowIsExportedAndErased() async throws {
        try await withService { port, path async throws in
            #expect(try await postReceipt(port, user: "ghost", "status_21003:ghost").status == 422)
            let db = try TestDatabase.open(path)
            #expect(try db.scalarInt("SELECT count(*) FROM verifications WHERE app_user_id = 'ghost'") == 1)
            #expect(try db.scalarInt("SELECT count(*) FROM subscribers WHERE app_user_id = 'ghost'") == 0)
            let export = try await request(port, "GET", "/v1/subscribers/ghost/export", key: TestSecrets.secretKey)
            #expect(export.status == 200, "\(export.body)")
            #expect(export.json["subscriber"] is NSNull && export.json["app_user_id"] as? String == "ghost")
            let verifications = (export.json["tables"] as? [String: Any])?["verifications"] as? [Any]
            #expect(verifications?.count == 1, "\(export.body)")
            let erased = try await request(port, "DELETE", "/v1/subscribers/ghost", key: TestSecrets.secretKey)
            #expect(erased.status == 200 && erased.json["rows"] as? Int == 1, "\(erased.body)")
            #expect(try db.scalarInt("SELECT count(*) FROM verifications WHERE app_user_id = 'ghost'") == 0)
            // Nothing names them now.
            let again = try await request(port, "DELETE", "/v1/subscribers/ghost", key: TestSecrets.secretKey)
            #expect(again.status == 404 && again.errorCode == "subscriber_not_found")
            #expect(try await request(port, "GET", "/v1/subscribers/ghost/export", key: TestSecrets.secretKey).status == 404)
        }
    }

    @Test func anErasureWhileTheSameIdPostsReceiptsLeavesOneConsistentOutcome() async throws {
        try await withService { port, path async throws in
            #expect(try await postReceipt(port, user: "zed", "active_monthly:zed-0").status == 200)
            #expect(try await postReceipt(port, user: "other", "trial:other").status == 200)
            // Receipts for zed keep arriving while zed is erased; every answer is a clean one: stored,
            // or (asked of Apple before the erasure, answered after) 409 `erased_meanwhile`, nothing
            // of zed's written back.
            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                for n in 1...12 {
                    group.addTask { try await postReceipt(port, user: "zed", "active_monthly:zed-\(n % 3)").status }
                }
                group.addTask {
                    try await request(port, "DELETE", "/v1/subscribers/zed", key: TestSecrets.secretKey).status
                }
                var all: [Int] = []
                for try await status in group { all.append(status) }
                return all
            }
            #expect(statuses.allSatisfy { $0 == 200 || $0 == 409 }, "\(statuses)")
            // Whatever came after the erasure stands on its own: a stored zed reads as active, and
            // stored rows agree with what derivation makes of them.
            let read = try await subscriber(port, "zed")
            #expect(read.status == 200 || read.status == 404)
            if read.status == 200 { #expect(entitlement(read.json, "premium")?["active"] as? Bool == true) }
            let db = try TestDatabase.open(path)
            let rederivation = Rederivation(
                settings: EntitlementSettings(
                    rules: EntitlementRules(["premium": ["monthly", "yearly", "premium_monthly", "lifetime"]]),
                    catalog: Catalog(), policy: DerivationPolicy()))
            let report = try rederivation.run(db, now: Int64(Date().timeIntervalSince1970 * 1000), dryRun: true)
            #expect(report.changed == 0, "\(report)")
            if db.dialect == .sqlite { #expect(try db.scalarInt("SELECT count(*) FROM pragma_foreign_key_check") == 0) }
            #expect(try db.scalarInt("SELECT count(*) FROM erasures") == 1)
        }
    }

    /// The second round of probing: ann's purchase taken by erin (policy `transfer`) left erin's id
    /// in ann's history and in the file after erin's erasure. Every way an id is copied into another
    /// person's rows, at once: a purchase erin took (from ann), one taken from erin (by bo), an
    /// alias, a promotion, a notification naming erin, webhook payloads queued for everyone. After
    /// the DELETE, no row, no answer and (on SQLite) no byte of the file or its WAL holds erin's ids.
    @Test func anErasedPersonIsInNoOneElsesHistoryNoAnswerAndNoByteOfTheFile() async throws {
        let (erin, alias) = ("erin-5b1e", "erin-alias-77")
        let wired = { (path: String) in
            var c = testConfiguration(path: path, signedData: .init(roots: [TestPKI.root], appAppleIDs: [1_234_567_890]))
            c.webhooks = WebhookSettings(endpoints: [
                WebhookEndpoint(
                    name: "crm", url: "http://127.0.0.1:9/hooks", secrets: ["whsec-test-0123456789abcdef"], maxConcurrent: 1,
                    timeout: .milliseconds(200))
            ])
            c.webhooks.allowHTTP = true
            return c
        }
        try await withClockedService(configuration: wired) { app, port, location, clock in
            let simulator = try #require(app.appStore)
            // ann buys; erin posts the same receipt and takes it.
            let shared = try await postReceipt(port, user: "ann", "active_monthly:shared-x")
            let sharedID = try #require(
                (shared.json["subscriptions"] as? [String: [String: Any]])?["monthly"]?["original_transaction_id"] as? String)
            clock.advance(by: 60_000)
            #expect(try await postReceipt(port, user: erin, "active_monthly:shared-x").status == 200)
            // erin buys; bo takes that one.
            let own = simulator.purchase(.activeMonthly, tag: "erin-own")
            #expect(
                try await postReceipts(port, #"{"app_user_id":"\#(erin)","transaction_id":"\#(own.transactionID)"}"#).status
                    == 200)
            clock.advance(by: 60_000)
            // (With the device's proof: a bare id from an app's key moves nothing someone holds.)
            #expect(try await postReceipts(port, #"{"app_user_id":"bo","receipt_data":"\#(own.receiptData)"}"#).status == 200)
            // An alias, a promotion, a notification about the purchase erin holds.
            #expect(
                try await post(port, "/v1/subscribers/\(erin)/aliases", #"{"alias":"\#(alias)"}"#, key: TestSecrets.secretKey)
                    .status == 200)
            let promoted = try await post(
                port, "/v1/subscribers/\(alias)/entitlements/premium/promotional", #"{"duration":"P7D","reason":"sorry"}"#,
                key: TestSecrets.secretKey)
            #expect(promoted.status == 201, "\(promoted.body)")
            let renewal = try #require(simulator.notification("DID_RENEW", transactionID: sharedID))
            #expect(try await post(port, "/v1/notifications/apple", #"{"signedPayload":"\#(renewal)"}"#).status == 200)

            // What another person's answers and rows show of erin before, so the test can fail.
            func answers() async throws -> [String: String] {
                var bodies: [String: String] = [:]
                for target in [
                    "/v1/subscribers/ann", "/v1/subscribers/ann/events", "/v1/subscribers/ann/export", "/v1/subscribers/bo",
                    "/v1/subscribers/bo/events", "/v1/subscribers/bo/export", "/v1/admin/shared-receipts",
                    "/v1/notifications", "/v1/notifications?app_user_id=\(erin)", "/v1/admin/webhooks/deliveries",
                    "/v1/admin/transactions/\(sharedID)", "/v1/admin/transactions/\(own.transactionID)",
                    "/v1/admin/shadow-diffs", "/v1/admin/stats?interval=day",
                ] {
                    bodies[target] = try await get(port, target, key: TestSecrets.secretKey).body
                }
                return bodies
            }
            let named = { (bodies: [String: String]) in bodies.filter { $0.value.contains("erin") }.keys.sorted() }
            #expect(try await named(answers()).count >= 6)
            let db = try TestDatabase.open(location)
            #expect(try rowsMentioning("erin", in: db).count >= 8)

            let erased = try await request(port, "DELETE", "/v1/subscribers/\(alias)", key: TestSecrets.secretKey)
            #expect(erased.status == 200, "\(erased.body)")
            #expect(try await named(answers()) == [])
            #expect(try rowsMentioning("erin", in: db) == [])
            // ann's and bo's histories keep the moves, unnamed; nothing is left to derive differently.
            let annEvents = try await subscriber(port, "ann", "/events").body
            #expect(annEvents.contains(#""to_app_user_id":"(erased)""#), "\(annEvents)")
            #expect(try await subscriber(port, "bo", "/events").body.contains(#""from_app_user_id":"(erased)""#))
            let rederivation = Rederivation(
                settings: EntitlementSettings(
                    rules: EntitlementRules(["premium": ["monthly", "yearly", "premium_monthly", "lifetime"]]),
                    catalog: Catalog(), policy: DerivationPolicy()))
            #expect(try rederivation.run(db, now: clock.now, dryRun: true).changed == 0)
            // SQLite: the bytes themselves, in the file and its WAL (the erasure checkpointed).
            if db.dialect == .sqlite {
                for file in [location, location + "-wal"] {
                    let bytes = (try? Data(contentsOf: URL(fileURLWithPath: file))) ?? Data()
                    #expect(bytes.range(of: Data("erin".utf8)) == nil, "\(file)")
                }
            }
        }
    }
}
