import DatabaseEngine
import Entitlements
import Identifiers
import ReceiptTesting
import Testing

@testable import Storage

@Suite("Merging two app user ids")
struct MergeTests {
    private func facts(_ original: String) -> VerifiedFacts {
        VerifiedFacts(
            environment: .sandbox,
            purchases: [
                Stated(
                    Purchase(
                        transactionID: original + "-t", originalTransactionID: original, productID: "monthly",
                        purchaseDate: 1000, originalPurchaseDate: 1000, expiresDate: 2000, environment: .sandbox),
                    bundleID: "com.x", rawJSON: "{}")
            ])
    }

    private func event(_ key: String, _ original: String) -> EventRecord {
        EventRecord(
            key: key, type: "initial_purchase", at: 5, productID: "monthly", originalTransactionID: original,
            transactionID: nil, factsJSON: "{}")
    }

    @Test(arguments: await testDialects())
    func theAliasesRowsJoinTheSubscriberEachEventOnceAndItsOwnAliasesFollow(_ dialect: Database.Dialect) async throws {
        let db = try await migratedDatabase(dialect)
        let store = ReceiptStore(db)
        _ = try store.save(facts("oA"), for: "anon", now: 1)
        _ = try store.save(facts("oB"), for: "acct", now: 2)
        // A purchase that passed from acct to anon: both have its purchase event, under one key.
        _ = try store.save(facts("oS"), for: "acct", now: 3)
        _ = try store.save(facts("oS"), for: "anon", now: 4)
        _ = try EventStore(db).replace([event("p:oA", "oA"), event("p:oS", "oS")], for: "anon", originals: ["oA", "oS"], now: 5)
        _ = try EventStore(db).replace([event("p:oB", "oB"), event("p:oS", "oS")], for: "acct", originals: ["oB"], now: 5)
        try store.log(
            VerificationLogEntry(
                appUserID: "anon", environment: .sandbox, appleStatus: 0, outcome: "valid", attempts: 1, latencyMs: 1), at: 5)
        // anon already has an alias of its own.
        _ = try db.transaction { try Merge(db).merge("device", into: "anon", at: 6) }

        let outcome = try db.transaction { try Merge(db).merge("anon", into: "acct", at: 7) }
        #expect(outcome == Merge.Outcome(moved: ["oA", "oS"], aliasWasKnown: true))
        #expect(try store.canonical("anon") == "acct" && store.canonical("device") == "acct" && store.canonical("acct") == "acct")
        #expect(try store.aliases(of: "acct") == [Alias(appUserID: "device", at: 6), Alias(appUserID: "anon", at: 7)])
        let record = try #require(try store.subscriber("device"))
        #expect(record.appUserID == "acct" && record.originals == ["oA", "oB", "oS"])
        #expect(try db.scalarInt("SELECT count(*) FROM subscribers WHERE app_user_id IN ('anon', 'device')") == 0)
        #expect(try db.scalarInt("SELECT count(*) FROM events WHERE app_user_id = 'acct'") == 3)
        #expect(try db.scalarInt("SELECT count(*) FROM events WHERE app_user_id = 'anon'") == 0)
        #expect(try db.scalarInt("SELECT count(*) FROM verifications WHERE app_user_id = 'acct'") == 1)
        // Each move is recorded; the derivation reads moves between one person's ids as no transfer.
        #expect(try db.scalarInt("SELECT count(*) FROM ownership_transfers WHERE from_app_user_id = 'anon' AND at = 7") == 2)
        let transfers = History.events(record.facts, appUserID: "acct", asOf: 10).filter { $0.kind == .transfer }
        #expect(transfers.isEmpty, "\(transfers)")
        let merges = History.events(record.facts, appUserID: "acct", asOf: 10).filter { $0.kind == .merge }
        #expect(merges.map(\.key) == ["merge:device", "merge:anon"])
        if dialect == .sqlite { #expect(try db.scalarInt("SELECT count(*) FROM pragma_foreign_key_check") == 0) }
    }

    /// One person is one customer, first seen when the first of their ids was: a merge keeps the
    /// earliest first seen, whichever way round, and into an id never stored before.
    @Test(arguments: await testDialects())
    func aMergedPersonWasFirstSeenWhenTheFirstOfTheirIdsWas(_ dialect: Database.Dialect) async throws {
        let db = try await migratedDatabase(dialect)
        let store = ReceiptStore(db)
        _ = try store.save(facts("o1"), for: "early", now: 100)
        _ = try store.save(facts("o2"), for: "late", now: 900)
        _ = try db.transaction { try Merge(db).merge("early", into: "late", at: 1000) }
        #expect(try store.firstSeen("late") == 100)
        // Into an id never stored: created at the merge, first seen when its alias was.
        _ = try db.transaction { try Merge(db).merge("late", into: "account", at: 2000) }
        #expect(try store.firstSeen("account") == 100)
        // A later id merged in changes nothing.
        _ = try store.save(facts("o3"), for: "newer", now: 3000)
        _ = try db.transaction { try Merge(db).merge("newer", into: "account", at: 4000) }
        #expect(try store.firstSeen("account") == 100 && store.firstSeen("newer") == nil)
    }

    @Test(arguments: await testDialects())
    func anIdNeverStoredBecomesAnAliasOfANewSubscriber(_ dialect: Database.Dialect) async throws {
        let db = try await migratedDatabase(dialect)
        let outcome = try db.transaction { try Merge(db).merge("later", into: "first", at: 3) }
        #expect(outcome == Merge.Outcome(moved: [], aliasWasKnown: false))
        #expect(try ReceiptStore(db).subscriber("later")?.appUserID == "first")
        #expect(try ReceiptStore(db).subscriber("later")?.aliases == [Alias(appUserID: "later", at: 3)])
    }
}
