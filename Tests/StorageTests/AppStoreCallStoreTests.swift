import DatabaseEngine
import Entitlements
import ReceiptTesting
import Testing

@testable import Storage

/// The queue of calls owed to the App Store Server API: queued once (again only with another
/// argument), claimed under a lease by one worker at a time, retried when due again, settled.
@Suite("App Store call store")
struct AppStoreCallStoreTests {
    @Test(arguments: await testDialects())
    func callsAreQueuedOnceClaimedUnderALeaseRetriedAndSettled(dialect: Database.Dialect) async throws {
        let db = try await migratedDatabase(dialect)
        let store = AppStoreCallStore(db)
        func finish(_ id: String, _ environment: String = "production", at now: Int64) throws -> Bool {
            try store.enqueue(.finishTransaction, subject: id, bundleID: "com.x", environment: environment, now: now)
        }
        #expect(try finish("t1", at: 100))
        #expect(!(try finish("t1", at: 150)))
        #expect(try finish("t2", "sandbox", at: 120))
        #expect(try store.backlog() == AppStoreCallStore.Backlog(pending: 2, oldestQueuedAt: 100, retrying: 0))
        // Not due before it was queued; then both, the longest due first; claimed, nobody else gets them.
        #expect(try store.claim(now: 99, leaseMs: 1000, limit: 10).isEmpty)
        let claimed = try store.claim(now: 200, leaseMs: 1000, limit: 10)
        #expect(claimed.map(\.subject) == ["t1", "t2"] && claimed.first?.environment == "production")
        #expect(try store.claim(now: 300, leaseMs: 1000, limit: 10).isEmpty)
        // t1 fails: due again at 5,000, when its lease is long gone; t2 is done.
        try store.failed(claimed[0], error: "unavailable", retryAt: 5_000)
        try store.settle(claimed[1], outcome: "done", at: 400)
        #expect(try store.state(.finishTransaction, subject: "t2")?.outcome == "done")
        #expect(try store.backlog() == AppStoreCallStore.Backlog(pending: 1, oldestQueuedAt: 100, retrying: 1))
        #expect(try store.claim(now: 4_999, leaseMs: 1000, limit: 10).isEmpty)
        let again = try store.claim(now: 5_000, leaseMs: 1000, limit: 10)
        #expect(again.map(\.subject) == ["t1"] && again.first?.attempts == 1)
        // A lease that ran out (the worker died) is claimed again.
        let retaken = try store.claim(now: 6_001, leaseMs: 1000, limit: 10)
        #expect(retaken.map(\.subject) == ["t1"])
        try store.settle(retaken[0], outcome: "refused", error: "transaction id not found", at: 6_100)
        #expect(try store.state(.finishTransaction, subject: "t1")?.outcome == "refused")
        #expect(try store.state(.finishTransaction, subject: "t1")?.attempts == 2)
        #expect(try store.backlog() == AppStoreCallStore.Backlog(pending: 0, oldestQueuedAt: nil, retrying: 0))
        #expect(try store.claim(now: 100_000, leaseMs: 1000, limit: 10).isEmpty)
        #expect(try store.state(.finishTransaction, subject: "t9") == nil)
    }

    /// A token call is due again when the purchase's holder (its token) changes, even once made;
    /// a call made meanwhile for the old token does not settle the new one.
    @Test(arguments: await testDialects())
    func aTokenCallIsDueAgainForANewToken(dialect: Database.Dialect) async throws {
        let db = try await migratedDatabase(dialect)
        let store = AppStoreCallStore(db)
        func token(_ t: String, at now: Int64) throws -> Bool {
            try store.enqueue(
                .setAppAccountToken, subject: "o1", argument: t, bundleID: "com.x", environment: "sandbox", now: now)
        }
        #expect(try token("aaaa", at: 1))
        #expect(!(try token("aaaa", at: 2)))
        // The same subject, another kind: its own call.
        #expect(try store.enqueue(.finishTransaction, subject: "o1", bundleID: "com.x", environment: "sandbox", now: 2))
        let first = try #require(try store.claim(now: 10, leaseMs: 100, limit: 10).first { $0.kind == .setAppAccountToken })
        #expect(try token("bbbb", at: 20))  // handed on while the call for aaaa is in flight
        try store.settle(first, outcome: "done", at: 30)
        #expect(try store.state(.setAppAccountToken, subject: "o1")?.outcome == nil)
        let next = try store.claim(now: 200, leaseMs: 100, limit: 10).filter { $0.kind == .setAppAccountToken }
        #expect(next.map(\.argument) == ["bbbb"])
        try store.settle(next[0], outcome: "done", at: 210)
        #expect(try store.state(.setAppAccountToken, subject: "o1")?.argument == "bbbb")
        #expect(!(try token("bbbb", at: 300)))
    }

    /// Each person's token is made once and kept; it names them.
    @Test(arguments: await testDialects())
    func aPersonsTokenIsMadeOnceAndNamesThem(dialect: Database.Dialect) async throws {
        let db = try await migratedDatabase(dialect)
        _ = try ReceiptStore(db).save(
            VerifiedFacts(
                environment: .production,
                purchases: [
                    Stated(
                        Purchase(transactionID: "t1", originalTransactionID: "t1", productID: "lifetime", purchaseDate: 1),
                        bundleID: "com.x", rawJSON: "{}")
                ]), for: "tess", now: 1)
        let store = AppStoreCallStore(db)
        #expect(
            try store.accountToken(of: "tess", make: { "11111111-2222-3333-4444-555555555555" })
                == "11111111-2222-3333-4444-555555555555")
        #expect(try store.accountToken(of: "tess", make: { "other" }) == "11111111-2222-3333-4444-555555555555")
        #expect(try store.accountToken(of: "nobody", make: { "x" }) == nil)
        #expect(try ReceiptStore(db).subscriber(namedByToken: "11111111-2222-3333-4444-555555555555".uppercased()) == "tess")
        #expect(try ReceiptStore(db).subscriber(forAccountToken: "11111111-2222-3333-4444-555555555555") == "tess")
        #expect(try store.purchaseToken("t1") == nil)
    }
}
