import DatabaseEngine
import Entitlements
import Foundation
import ReceiptCore
import ReceiptTesting
import Storage
import Testing

/// POST and DELETE /v1/subscribers/{id}/entitlements/{name}/promotional.
@Suite("Promotional entitlements over the API")
struct PromotionTests {
    private let day: Int64 = 86_400_000

    private func grant(_ port: Int, _ user: String, _ body: String, name: String = "premium", key: String = TestSecrets.secretKey)
        async throws -> Reply
    {
        try await post(port, "/v1/subscribers/\(user)/entitlements/\(name)/promotional", body, key: key)
    }

    private func revoke(_ port: Int, _ user: String, _ name: String = "premium", _ body: String = "") async throws -> Reply {
        try await request(
            port, "DELETE", "/v1/subscribers/\(user)/entitlements/\(name)/promotional", body, key: TestSecrets.secretKey)
    }

    private func events(_ port: Int, _ user: String) async throws -> [[String: Any]] {
        try await subscriber(port, user, "/events").json["events"] as? [[String: Any]] ?? []
    }

    private func rederivedChanges(_ path: String, now: Int64) throws -> Int {
        let rederivation = Rederivation(
            settings: EntitlementSettings(
                rules: EntitlementRules(["premium": ["monthly", "yearly", "premium_monthly", "lifetime"]]),
                catalog: Catalog(), policy: DerivationPolicy()))
        return try rederivation.run(TestDatabase.open(path), now: now, dryRun: true).changed
    }

    @Test func aGrantEntitlesUntilItsEndAndIsAFactWithWhoAndWhy() async throws {
        try await withClockedService { _, port, path, clock in
            #expect(try await postReceipt(port, user: "eve", "expired_voluntary:eve").status == 200)
            #expect(entitlement(try await subscriber(port, "eve").json, "premium")?["active"] as? Bool == false)

            let granted = try await grant(port, "eve", #"{"duration":"P7D","reason":"Sorry about the outage"}"#)
            #expect(granted.status == 201, "\(granted.body)")
            let promotion = (granted.json["promotions"] as? [[String: Any]])?.first ?? [:]
            #expect(promotion["reason"] as? String == "Sorry about the outage")
            #expect((promotion["granted_by"] as? String)?.hasPrefix("key:") == true)
            #expect(!granted.body.contains(TestSecrets.secretKey), "the key itself is never written")

            // The document: a promotional grant, explained; it wins over the expired subscription.
            let read = try await subscriber(port, "eve", "?explain=true")
            let premium = entitlement(read.json, "premium") ?? [:]
            #expect(premium["active"] as? Bool == true && premium["store"] as? String == "promotional")
            #expect(premium["product_id"] is NSNull && premium["expires_at"] as? String == promotion["expires_at"] as? String)
            let explanation = premium["explanation"] as? [String: Any] ?? [:]
            #expect(explanation["rule"] as? String == "granted_by_promotion")
            #expect((explanation["decision"] as? String)?.contains("Sorry about the outage") == true)
            let plain = entitlement(try await subscriber(port, "eve").json, "premium") ?? [:]
            #expect(plain["store"] as? String == "promotional" && plain["explanation"] == nil)

            // An event, and re-derivable: the stored facts give the same state and events again.
            #expect(try await events(port, "eve").first?["type"] as? String == "promotional_grant")
            #expect(try rederivedChanges(path, now: clock.now) == 0)

            // Seven days on it has ended, by itself, with an event.
            clock.advance(by: 7 * day + 1)
            let ended = entitlement(try await subscriber(port, "eve", "?explain=true").json, "premium") ?? [:]
            #expect(ended["active"] as? Bool == false)
            let kinds = try await events(port, "eve").compactMap { $0["type"] as? String }
            #expect(kinds.first == "promotional_expiration", "\(kinds)")
            #expect(try rederivedChanges(path, now: clock.now) == 0)
            // Nothing to revoke now.
            let late = try await revoke(port, "eve")
            #expect(late.status == 404 && late.errorCode == "promotion_not_found")
        }
    }

    @Test func aRevocationEndsItNowAndAPurchaseStillGrants() async throws {
        try await withService { port, _ in
            // A promotion of an unconfigured entitlement, for an id never seen: both are created.
            let until = "2030-01-01T00:00:00Z"
            let granted = try await grant(port, "newcomer", #"{"expires_at":"\#(until)","reason":"tester"}"#, name: "beta")
            #expect(granted.status == 201, "\(granted.body)")
            #expect(entitlement(try await subscriber(port, "newcomer").json, "beta")?["active"] as? Bool == true)

            let revoked = try await revoke(port, "newcomer", "beta", #"{"reason":"left the beta"}"#)
            #expect(revoked.status == 200, "\(revoked.body)")
            #expect((revoked.json["promotions"] as? [[String: Any]])?.first?["revoke_reason"] as? String == "left the beta")
            let after = entitlement(try await subscriber(port, "newcomer", "?explain=true").json, "beta") ?? [:]
            #expect(after["active"] as? Bool == false && after["state"] as? String == "revoked")
            #expect(try await events(port, "newcomer").first?["type"] as? String == "promotional_revocation")
            // Twice: nothing left to revoke, nothing written.
            let again = try await revoke(port, "newcomer", "beta")
            #expect(again.status == 404 && again.errorCode == "promotion_not_found")
            #expect(try await revoke(port, "nobody", "beta").errorCode == "subscriber_not_found")

            // A subscriber who pays keeps the purchase's grant when the promotion is revoked.
            #expect(try await postReceipt(port, user: "payer", "active_monthly:payer").status == 200)
            #expect(try await grant(port, "payer", #"{"duration":"P1D","reason":"goodwill"}"#).status == 201)
            let paying = entitlement(try await subscriber(port, "payer").json, "premium") ?? [:]
            #expect(paying["store"] as? String == "app_store", "the subscription lasts longer: it is the better grant")
            #expect(try await revoke(port, "payer").status == 200)
            #expect(entitlement(try await subscriber(port, "payer").json, "premium")?["active"] as? Bool == true)
        }
    }

    @Test func refusesBadInputAndPublicKeysAndWritesNothing() async throws {
        try await withService { port, path in
            #expect(try await postReceipt(port, user: "ann", "active_monthly:ann").status == 200)
            let before = try tableSnapshot(path)
            let refused = try await grant(port, "ann", #"{"duration":"P7D","reason":"x"}"#, key: TestSecrets.publicKey)
            #expect(refused.status == 403)
            for body in [
                "", "[]", #"{"reason":"x"}"#, #"{"duration":"7 days","reason":"x"}"#, #"{"duration":"P7D"}"#,
                #"{"duration":"P7D","reason":"  "}"#, #"{"duration":"P7D","expires_at":"2030-01-01T00:00:00Z","reason":"x"}"#,
                #"{"expires_at":"2001-01-01T00:00:00Z","reason":"x"}"#, #"{"duration":"P20Y","reason":"x"}"#,
                #"{"duration":"P7D","reason":\#(String(repeating: "a", count: 501).debugDescription)}"#,
            ] {
                let reply = try await grant(port, "ann", body)
                #expect(reply.status == 400 && reply.errorCode == "invalid_request", "\(body): \(reply.body)")
            }
            let control = try await grant(port, "ann", #"{"duration":"P7D","reason":"x"}"#, name: "pre%01mium")
            #expect(control.status == 400, "\(control.body)")
            #expect(try tableSnapshot(path) == before)
        }
    }

    @Test func erasureAndMergeCarryPromotions() async throws {
        try await withService { port, path in
            #expect(try await grant(port, "anon", #"{"duration":"P7D","reason":"trial extension"}"#).status == 201)
            let merged = try await post(port, "/v1/subscribers/known/aliases", #"{"alias":"anon"}"#, key: TestSecrets.secretKey)
            #expect(merged.status == 200, "\(merged.body)")
            #expect(entitlement(try await subscriber(port, "known").json, "premium")?["store"] as? String == "promotional")
            #expect(try await request(port, "DELETE", "/v1/subscribers/known", key: TestSecrets.secretKey).status == 200)
            let db = try TestDatabase.open(path)
            for table in ["promotions", "product_states"] {
                let q = try db.prepare("SELECT count(*) FROM \(table)")
                #expect(try q.firstInt() == 0, "\(table)")
            }
        }
    }
}
