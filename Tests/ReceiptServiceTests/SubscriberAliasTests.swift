import DatabaseEngine
import Entitlements
import Foundation
import ReceiptCore
import ReceiptTesting
import Storage
import Testing

/// POST /v1/subscribers/{id}/aliases: two ids, one subscriber.
@Suite("Aliases over the API")
struct SubscriberAliasTests {
    private func alias(_ port: Int, _ user: String, _ alias: String, key: String = TestSecrets.secretKey) async throws -> Reply {
        try await post(port, "/v1/subscribers/\(user)/aliases", #"{"alias":"\#(alias)"}"#, key: key)
    }

    private func rederivedChanges(_ path: String) throws -> Int {
        let rederivation = Rederivation(
            settings: EntitlementSettings(
                rules: EntitlementRules(["premium": ["monthly", "yearly", "premium_monthly", "lifetime"]]),
                catalog: Catalog(), policy: DerivationPolicy()))
        return try rederivation.run(TestDatabase.open(path), now: Int64(Date().timeIntervalSince1970 * 1000), dryRun: true)
            .changed
    }

    private func subscriptions(_ reply: Reply) -> [String: Any] { reply.json["subscriptions"] as? [String: Any] ?? [:] }

    @Test func afterAnAliasBothIdsReadAndPostAsOneSubscriberWithOneHistory() async throws {
        try await withService { port, path async throws in
            // An anonymous id buys; the app then learns who it is.
            #expect(try await postReceipt(port, user: "anon-7f3", "active_monthly:anon-buy").status == 200)
            let anonEvents = try await subscriber(port, "anon-7f3", "/events")
            let bought = (anonEvents.json["events"] as? [[String: Any]] ?? []).compactMap { $0["type"] as? String }
            #expect(!bought.isEmpty)

            #expect(try await alias(port, "real", "anon-7f3", key: TestSecrets.publicKey).status == 403)
            let merged = try await alias(port, "real", "anon-7f3")
            #expect(merged.status == 200, "\(merged.body)")
            #expect(merged.json["merged"] as? Bool == true)
            #expect((merged.json["moved"] as? [String])?.count == 1)
            let document = merged.json["subscriber"] as? [String: Any] ?? [:]
            #expect(document["app_user_id"] as? String == "real")
            #expect(document["aliases"] as? [String] == ["anon-7f3"])

            // Either id reads the same document (twice each: the second from the cache).
            let real = try await subscriber(port, "real")
            for _ in 0..<2 {
                for id in ["real", "anon-7f3"] {
                    let read = try await subscriber(port, id)
                    #expect(read.status == 200)
                    #expect(read.json["app_user_id"] as? String == "real")
                    #expect(read.json["version"] as? Int == real.json["version"] as? Int)
                    #expect(entitlement(read.json, "premium")?["active"] as? Bool == true)
                }
            }
            // A post under the alias stores for the subscriber; one under the id sees it.
            let posted = try await postReceipt(port, user: "anon-7f3", "downgrade_pending:anon-second")
            #expect(posted.status == 200 && posted.json["app_user_id"] as? String == "real", "\(posted.body)")
            #expect(Set(subscriptions(try await subscriber(port, "real")).keys) == ["monthly", "yearly"])
            #expect(try await postReceipt(port, user: "real", "non_consumable:real-own").status == 200)
            let both = try await subscriber(port, "anon-7f3")
            #expect(subscriptions(both).count == 2 && (both.json["non_subscriptions"] as? [String: Any])?["lifetime"] != nil)

            // One history: the anonymous id's events, then one merge event, under either id.
            let events = try await subscriber(port, "anon-7f3", "/events")
            let list = events.json["events"] as? [[String: Any]] ?? []
            let merges = list.filter { $0["type"] as? String == "merge" }
            #expect(merges.count == 1)
            #expect((merges.first?["facts"] as? [String: Any])?["alias_app_user_id"] as? String == "anon-7f3")
            #expect(merges.first?["product_id"] is NSNull)
            #expect(list.filter { $0["type"] as? String == "transfer" }.isEmpty, "a merge is no transfer")
            for type in bought { #expect(list.filter { $0["type"] as? String == type }.count >= 1, "\(type)") }
            let underID = try await subscriber(port, "real", "/events")
            #expect((underID.json["events"] as? [Any])?.count == list.count)

            // Again: nothing changes. The subscriber's own id is no alias; another's alias is taken.
            let again = try await alias(port, "real", "anon-7f3")
            #expect(again.status == 200 && again.json["merged"] as? Bool == false)
            let current = try await subscriber(port, "real")
            #expect((again.json["subscriber"] as? [String: Any])?["version"] as? Int == current.json["version"] as? Int)
            let own = try await alias(port, "real", "real")
            #expect(own.status == 400 && own.errorCode == "invalid_request")
            #expect(try await postReceipt(port, user: "someone", "trial:someone").status == 200)
            let taken = try await alias(port, "someone", "anon-7f3")
            #expect(taken.status == 409 && taken.errorCode == "alias_taken", "\(taken.body)")
            let bad = try await post(port, "/v1/subscribers/real/aliases", #"{"alias":""}"#, key: TestSecrets.secretKey)
            #expect(bad.status == 400 && bad.errorCode == "invalid_request")
            // Aliasing through an alias reaches the subscriber too.
            #expect(try await alias(port, "anon-7f3", "device-2").json["merged"] as? Bool == true)
            #expect((try await subscriber(port, "device-2")).json["aliases"] as? [String] == ["anon-7f3", "device-2"])

            let db = try TestDatabase.open(path)
            #expect(try db.scalarInt("SELECT count(*) FROM subscribers WHERE app_user_id = 'anon-7f3'") == 0)
            #expect(try db.scalarInt("SELECT count(*) FROM events WHERE app_user_id = 'anon-7f3'") == 0)
            #expect(try db.scalarInt("SELECT count(*) FROM aliases WHERE app_user_id = 'real'") == 2)
            #expect(try rederivedChanges(path) == 0)
        }
    }

    @Test func mergingAnIdIntoAnotherThatAlsoHoldsPurchasesFollowsTheOwnershipPolicy() async throws {
        for policy in OwnershipPolicy.allCases {
            try await withService(policy: policy.rawValue) { port, path async throws in
                // Only one side holds purchases: every policy merges.
                #expect(try await postReceipt(port, user: "solo-anon", "active_monthly:solo").status == 200)
                #expect(try await alias(port, "solo", "solo-anon").json["merged"] as? Bool == true, "\(policy)")

                // Both hold purchases, the alias's active.
                #expect(try await postReceipt(port, user: "acct", "downgrade_pending:acct-own").status == 200)
                #expect(try await postReceipt(port, user: "dev", "active_monthly:dev-own").status == 200)
                let before = try tableSnapshot(path)
                let both = try await alias(port, "acct", "dev")
                switch policy {
                case .transfer:
                    #expect(both.status == 200 && both.json["merged"] as? Bool == true, "\(both.body)")
                    #expect(Set(subscriptions(try await subscriber(port, "dev")).keys) == ["monthly", "yearly"])
                case .keep, .transferIfInactive:
                    #expect(both.status == 409 && both.errorCode == "merge_conflict", "\(policy): \(both.body)")
                    #expect(try tableSnapshot(path) == before, "\(policy): a refused merge writes nothing")
                    #expect((try await subscriber(port, "dev")).json["app_user_id"] as? String == "dev")
                }

                // Both hold purchases, the alias's long expired.
                #expect(try await postReceipt(port, user: "acct2", "downgrade_pending:acct2-own").status == 200)
                #expect(try await postReceipt(port, user: "old", "expired_voluntary:old-own").status == 200)
                let expired = try await alias(port, "acct2", "old")
                switch policy {
                case .transfer, .transferIfInactive:
                    #expect(expired.status == 200 && expired.json["merged"] as? Bool == true, "\(policy): \(expired.body)")
                    #expect(subscriptions(try await subscriber(port, "acct2")).count == 2)
                case .keep:
                    #expect(expired.status == 409 && expired.errorCode == "merge_conflict", "\(policy)")
                }
                #expect(try rederivedChanges(path) == 0, "\(policy)")
            }
        }
    }

    @Test func erasingByEitherIdErasesThePersonUnderAllTheirIds() async throws {
        try await withService { port, path async throws in
            #expect(try await postReceipt(port, user: "anon-q9z4w", "active_monthly:erase-after-merge").status == 200)
            #expect(try await alias(port, "acct-k2v8", "anon-q9z4w").status == 200)
            #expect(try await postReceipt(port, user: "bystander", "trial:bystander").status == 200)
            let erased = try await request(port, "DELETE", "/v1/subscribers/anon-q9z4w", key: TestSecrets.secretKey)
            #expect(erased.status == 200, "\(erased.body)")
            for id in ["anon-q9z4w", "acct-k2v8"] { #expect(try await subscriber(port, id).status == 404) }
            #expect(try await subscriber(port, "bystander").status == 200)
            let db = try TestDatabase.open(path)
            #expect(try db.scalarInt("SELECT count(*) FROM aliases") == 0)
            if db.dialect == .sqlite {
                let raw = { (file: String) in (try? Data(contentsOf: URL(fileURLWithPath: file))) ?? Data() }
                for needle in ["anon-q9z4w", "acct-k2v8"] {
                    for file in [path, path + "-wal"] {
                        #expect(raw(file).range(of: Data(needle.utf8)) == nil, "\(needle) in \(file)")
                    }
                }
            }
            // A new post under the old alias starts a new subscriber: no alias survives the erasure.
            let fresh = try await postReceipt(port, user: "anon-q9z4w", "trial:fresh-start")
            #expect(fresh.json["app_user_id"] as? String == "anon-q9z4w" && fresh.json["aliases"] as? [String] == [])
        }
    }
}
