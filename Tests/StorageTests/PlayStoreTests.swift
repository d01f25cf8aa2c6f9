import DatabaseEngine
import Entitlements
import ReceiptTesting
import Testing

@testable import Storage

@Suite("Google Play's tokens and the calls Google is owed")
struct PlayStoreTests {
    static func token(_ reference: String, chain: String? = nil, linked: String? = nil, kind: PlayToken.Kind = .subscription)
        -> PlayToken
    {
        PlayToken(
            reference: reference, purchaseToken: "secret-" + reference, packageName: "com.example.app", kind: kind,
            productID: kind == .subscription ? "pro_monthly" : "coins", chain: chain ?? reference, linkedReference: linked)
    }

    @Test(arguments: await testDialects())
    func aLinkedChainIsOneSubscriptionWhicheverTokenIsSeenFirst(dialect: Database.Dialect) async throws {
        let store = PlayStore(try await migratedDatabase(dialect))
        // Unknown and unlinked: its own. Linked to an unknown token: that token's reference.
        #expect(try store.chain(of: "GPT.a", linkedTo: nil) == "GPT.a")
        #expect(try store.chain(of: "GPT.b", linkedTo: "GPT.a") == "GPT.a")
        // The newer token (b, linked to a) is stored first; a, then c linked to b, join its chain.
        try store.remember(Self.token("GPT.b", chain: "GPT.a", linked: "GPT.a"), acknowledgement: .done, consume: false, now: 1)
        #expect(try store.chain(of: "GPT.a", linkedTo: "GPT.z") == "GPT.a")
        #expect(try store.chain(of: "GPT.c", linkedTo: "GPT.b") == "GPT.a")
        // A stored token keeps its chain.
        #expect(try store.chain(of: "GPT.b", linkedTo: nil) == "GPT.a")
        #expect(try store.token("GPT.b")?.purchaseToken == "secret-GPT.b")
        #expect(try store.token("GPT.nope") == nil)
    }

    @Test(arguments: await testDialects())
    func anUnacknowledgedPurchaseIsQueuedClaimedOnceAndRetriedUntilDone(dialect: Database.Dialect) async throws {
        let db = try await migratedDatabase(dialect)
        let store = PlayStore(db)
        try store.remember(Self.token("GPT.a"), acknowledgement: .owed, consume: false, now: 1_000)
        try store.remember(Self.token("GPT.b"), acknowledgement: .done, consume: false, now: 1_000)
        #expect(try store.backlog() == .init(unacknowledged: 1, oldestUnacknowledgedSince: 1_000, retrying: 0, unconsumed: 0))
        let claimed = try store.claim(now: 1_000, leaseMs: 30_000, limit: 10)
        #expect(claimed == [PlayChore(kind: .acknowledge, token: Self.token("GPT.a"), attempts: 0)])
        #expect(try store.claim(now: 1_001, leaseMs: 30_000, limit: 10).isEmpty)  // held by the first claim
        try store.failed(claimed[0], error: "Google answered 503", retryAt: 5_000)
        #expect(try store.backlog() == .init(unacknowledged: 1, oldestUnacknowledgedSince: 1_000, retrying: 1, unconsumed: 0))
        #expect(try store.claim(now: 4_999, leaseMs: 30_000, limit: 10).isEmpty)  // not due yet
        // A read again meanwhile keeps its place in the queue.
        try store.remember(Self.token("GPT.a"), acknowledgement: .owed, consume: false, now: 4_000)
        let again = try store.claim(now: 5_000, leaseMs: 30_000, limit: 10)
        #expect(again.map(\.attempts) == [1])
        try store.done(again[0], at: 5_100)
        #expect(try store.backlog() == .init(unacknowledged: 0, oldestUnacknowledgedSince: nil, retrying: 0, unconsumed: 0))
        // Google lags in saying so: a read that still says "pending" queues nothing once receiptd acknowledged it.
        try store.remember(Self.token("GPT.a"), acknowledgement: .owed, consume: false, now: 6_000)
        #expect(try store.claim(now: 10_000, leaseMs: 30_000, limit: 10).isEmpty)
    }

    @Test(arguments: await testDialects())
    func aClaimLeftByADeadProcessRunsOut(dialect: Database.Dialect) async throws {
        let store = PlayStore(try await migratedDatabase(dialect))
        try store.remember(Self.token("GPT.a"), acknowledgement: .owed, consume: false, now: 0)
        #expect(try store.claim(now: 0, leaseMs: 30_000, limit: 10).count == 1)
        #expect(try store.claim(now: 29_999, leaseMs: 30_000, limit: 10).isEmpty)
        #expect(try store.claim(now: 30_000, leaseMs: 30_000, limit: 10).count == 1)
    }

    @Test(arguments: await testDialects())
    func aConsumptionIsQueuedOnlyWhenAskedAndAcknowledgesToo(dialect: Database.Dialect) async throws {
        let store = PlayStore(try await migratedDatabase(dialect))
        let coins = Self.token("GPT.c", kind: .product)
        try store.remember(coins, acknowledgement: .owed, consume: true, now: 0)
        // One claim holds the token: the consumption first, which acknowledges too.
        let consume = try store.claim(now: 0, leaseMs: 30_000, limit: 10)
        #expect(consume.map(\.kind) == [.consume])
        try store.done(consume[0], at: 2)
        // Consuming acknowledges: nothing is owed now.
        #expect(try store.backlog() == .init(unacknowledged: 0, oldestUnacknowledgedSince: nil, retrying: 0, unconsumed: 0))
        #expect(try store.claim(now: 1_000, leaseMs: 30_000, limit: 10).isEmpty)
        // A pending payment owes nothing yet; once paid, a read queues it.
        try store.remember(Self.token("GPT.p"), acknowledgement: .notYet, consume: false, now: 0)
        #expect(try store.claim(now: 1_000, leaseMs: 30_000, limit: 10).isEmpty)
        try store.remember(Self.token("GPT.p"), acknowledgement: .owed, consume: false, now: 2_000)
        let paid = try store.claim(now: 2_000, leaseMs: 30_000, limit: 10)
        #expect(paid.map(\.token.reference) == ["GPT.p"])
        try store.done(paid[0], at: 2_001)
        // A failure for good leaves it owed no more (until a read queues it again).
        try store.remember(Self.token("GPT.d"), acknowledgement: .owed, consume: false, now: 0)
        let d = try store.claim(now: 0, leaseMs: 1, limit: 10)
        try store.failed(d[0], error: "the token is no longer valid", retryAt: nil)
        #expect(try store.backlog().unacknowledged == 0)
    }
}
