import Entitlements
import Foundation
import ReceiptCore
import ReceiptTesting
import Storage
import Testing

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

    @Test func anErasureWhileTheSameIdPostsReceiptsLeavesOneConsistentOutcome() async throws {
        try await withService { port, path async throws in
            #expect(try await postReceipt(port, user: "zed", "active_monthly:zed-0").status == 200)
            #expect(try await postReceipt(port, user: "other", "trial:other").status == 200)
            // Receipts for zed keep arriving while zed is erased; every answer is a clean one.
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
            #expect(statuses.allSatisfy { $0 == 200 }, "\(statuses)")
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
}
