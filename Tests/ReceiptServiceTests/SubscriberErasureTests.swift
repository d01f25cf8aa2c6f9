import Foundation
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
}
