import ReceiptTesting
import Testing

@testable import Storage

/// The Finish Transaction queue: queued once, claimed under a lease by one worker at a time,
/// retried when due again, settled for good.
@Suite("Finish store")
struct FinishStoreTests {
    @Test(arguments: await testDialects())
    func callsAreQueuedOnceClaimedUnderALeaseRetriedAndSettled(dialect: Database.Dialect) async throws {
        let db = try await migratedDatabase(dialect)
        let store = FinishStore(db)
        #expect(try store.enqueue(transactionID: "t1", bundleID: "com.x", environment: "production", now: 100))
        #expect(!(try store.enqueue(transactionID: "t1", bundleID: "com.x", environment: "production", now: 150)))
        #expect(try store.enqueue(transactionID: "t2", bundleID: "com.x", environment: "sandbox", now: 120))
        #expect(try store.backlog() == FinishStore.Backlog(pending: 2, oldestQueuedAt: 100, retrying: 0))
        // Not due before it was queued; then both, the longest due first; claimed, nobody else gets them.
        #expect(try store.claim(now: 99, leaseMs: 1000, limit: 10).isEmpty)
        let claimed = try store.claim(now: 200, leaseMs: 1000, limit: 10)
        #expect(claimed.map(\.transactionID) == ["t1", "t2"] && claimed.first?.environment == "production")
        #expect(try store.claim(now: 300, leaseMs: 1000, limit: 10).isEmpty)
        // t1 fails: due again at 5,000, when its lease is long gone; t2 is finished.
        try store.failed("t1", error: "unavailable", retryAt: 5_000)
        try store.settle("t2", outcome: "finished", at: 400)
        #expect(try store.state(of: "t2")?.outcome == "finished")
        #expect(try store.backlog() == FinishStore.Backlog(pending: 1, oldestQueuedAt: 100, retrying: 1))
        #expect(try store.claim(now: 4_999, leaseMs: 1000, limit: 10).isEmpty)
        let again = try store.claim(now: 5_000, leaseMs: 1000, limit: 10)
        #expect(again.map(\.transactionID) == ["t1"] && again.first?.attempts == 1)
        // A lease that ran out (the worker died) is claimed again.
        #expect(try store.claim(now: 6_001, leaseMs: 1000, limit: 10).map(\.transactionID) == ["t1"])
        try store.settle("t1", outcome: "refused", error: "transaction id not found", at: 6_100)
        #expect(try store.state(of: "t1")?.outcome == "refused" && store.state(of: "t1")?.attempts == 2)
        #expect(try store.backlog() == FinishStore.Backlog(pending: 0, oldestQueuedAt: nil, retrying: 0))
        #expect(try store.claim(now: 100_000, leaseMs: 1000, limit: 10).isEmpty)
        #expect(try store.state(of: "t9") == nil)
    }
}
