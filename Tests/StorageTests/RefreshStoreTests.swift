import DatabaseEngine
import Entitlements
import ReceiptTesting
import Testing

@testable import Storage

@Suite("Refresh store")
struct RefreshStoreTests {
    /// alice holds o1, a subscription that expired at 2000, with a stored receipt.
    private func database(_ dialect: Database.Dialect) async throws -> Database {
        let db = try await migratedDatabase(dialect)
        let facts = VerifiedFacts(
            environment: .sandbox,
            purchases: [
                Stated(
                    Purchase(
                        transactionID: "t1", originalTransactionID: "o1", productID: "monthly", purchaseDate: 1000,
                        originalPurchaseDate: 1000, expiresDate: 2000, environment: .sandbox, subscriptionGroupID: "g"),
                    bundleID: "com.x", rawJSON: #"{"transaction_id":"t1"}"#)
            ],
            latestReceipt: "QUJD")
        _ = try ReceiptStore(db).save(facts, for: "alice", now: 1000)
        return db
    }

    @Test(arguments: await testDialects())
    func anExpiredSubscriptionIsACandidateClaimedOnceUntilAnswered(dialect: Database.Dialect) async throws {
        let db = try await database(dialect)
        let store = RefreshStore(db)
        #expect(try store.sliceEnd(after: nil, count: 1) == "o1")
        #expect(try store.sliceEnd(after: nil, count: 2) == nil)
        let found = try store.candidates(now: 3000, since: 0, limit: 10)
        #expect(found.map(\.originalTransactionID) == ["o1"] && found.first?.holder == "alice")
        #expect(found.first?.expiresAt == 2000 && found.first?.lastCheckedAt == nil)
        #expect(try store.candidates(now: 1500, since: 0, limit: 10).isEmpty)  // not expired yet
        #expect(try store.candidates(now: 3000, since: 0, after: "o1", limit: 10).isEmpty)  // past the slice
        #expect(try store.claim("o1", now: 3000, until: 3100))
        #expect(try !store.claim("o1", now: 3050, until: 3200))  // held
        #expect(try store.candidates(now: 3050, since: 0, limit: 10).isEmpty)
        try store.answered("o1", outcome: "valid", now: 3060)
        #expect(try store.candidates(now: 3070, since: 0, limit: 10).isEmpty)  // checked since it expired
        #expect(try store.claim("o1", now: 3070, until: 3200))  // released
    }
}
