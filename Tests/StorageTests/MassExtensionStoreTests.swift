import DatabaseEngine
import Entitlements
import ReceiptTesting
import Testing

@testable import Storage

/// Mass extensions: stored once per request id, claimed under a lease, moved on by a SUMMARY
/// notification only from where it waits, and the stored subscriptions a finished one reached.
@Suite("Mass extension store")
struct MassExtensionStoreTests {
    static func request(_ id: String = "r1", at: Int64 = 1_000, storefronts: [String] = []) -> MassExtensionRecord {
        MassExtensionRecord(
            requestID: id, bundleID: "com.x", environment: "production", productID: "monthly", storefronts: storefronts,
            days: 7, reason: "service_issue", requestedBy: "key:abc", requestedAt: at, dueAt: at)
    }

    @Test(arguments: await testDialects())
    func aRequestIsStoredOnceClaimedUnderALeaseAndSavedFromItsClaimedStatus(dialect: Database.Dialect) async throws {
        let db = try await migratedDatabase(dialect)
        let store = MassExtensionStore(db)
        #expect(try store.insert(Self.request(storefronts: ["CAN", "USA"])))
        #expect(!(try store.insert(Self.request(at: 5))))
        #expect(try store.find("r1") == Self.request(storefronts: ["CAN", "USA"]))
        #expect(try store.find("r2") == nil)
        #expect(try store.insert(Self.request("r2", at: 2_000)))
        #expect(try store.list(limit: 10).map(\.requestID) == ["r2", "r1"])
        #expect(try store.list(limit: 10, before: (2_000, "r2")).map(\.requestID) == ["r1"])

        #expect(try store.claim(now: 999, leaseMs: 100, limit: 10).isEmpty)
        var claimed = try store.claim(now: 1_500, leaseMs: 100, limit: 10)
        #expect(claimed.map(\.requestID) == ["r1"])
        #expect(try store.claim(now: 1_550, leaseMs: 100, limit: 10).isEmpty)
        claimed[0].status = .inProgress
        claimed[0].submittedAt = 1_500
        claimed[0].dueAt = 9_000
        try store.save(claimed[0], claimedStatus: .submitting)
        #expect(try store.find("r1")?.status == .inProgress)
        #expect(try store.claim(now: 8_999, leaseMs: 100, limit: 10).map(\.requestID) == ["r2"])

        // Apple's summary moves r1 on; a save from the status it had when claimed no longer applies.
        let stale = try #require(try store.claim(now: 9_000, leaseMs: 100, limit: 10).first)
        #expect(try store.summarized("r1", productID: "other", succeeded: 1, failed: 0, at: 9_010, now: 9_020) == false)
        #expect(try store.summarized("r1", productID: "monthly", succeeded: 30, failed: 2, at: 9_010, now: 9_020))
        var late = stale
        late.dueAt = 20_000
        try store.save(late, claimedStatus: .inProgress)
        let summarized = try #require(try store.find("r1"))
        #expect(summarized.status == .refreshing && summarized.succeededCount == 30 && summarized.failedCount == 2)
        #expect(summarized.appleCompletedAt == 9_010 && summarized.dueAt == 9_020)
        // The lease went with the save that did not apply: claimable at once.
        #expect(try store.claim(now: 9_030, leaseMs: 100, limit: 10).map(\.requestID) == ["r1"])
        #expect(try store.summarized("r1", productID: "monthly", succeeded: 1, failed: 1, at: 1, now: 1) == false)
    }

    @Test(arguments: await testDialects())
    func theSubscriptionsReachedAreTheHeldOnesOfItsProductRunningWhenAsked(dialect: Database.Dialect) async throws {
        let db = try await migratedDatabase(dialect)
        let receipts = ReceiptStore(db)
        func save(
            _ original: String, product: String = "monthly", expires: Int64, storefront: String? = "USA",
            environment: StoreEnvironment = .production, holder: String? = "u"
        ) throws {
            var purchase = Purchase(
                transactionID: "t" + original, originalTransactionID: original, productID: product, purchaseDate: 0,
                expiresDate: expires, environment: environment, subscriptionGroupID: "g")
            purchase.commerce.storefront = storefront
            let facts = VerifiedFacts(environment: environment, purchases: [Stated(purchase, bundleID: "com.x", rawJSON: "{}")])
            if let holder {
                _ = try receipts.save(facts, for: holder + original, now: 1)
            } else {
                _ = try receipts.saveUnowned(facts, now: 1)
            }
        }
        try save("o1", expires: 2_000)
        try save("o2", expires: 500)  // over before the request
        try save("o3", product: "yearly", expires: 2_000)
        try save("o4", expires: 2_000, storefront: "CAN")
        try save("o5", expires: 2_000, environment: .sandbox)
        try save("o6", expires: 2_000, holder: nil)  // nobody holds it here
        try save("o7", expires: 1_000, storefront: nil)
        // o8 moved on to another product (an upgrade): its newest transaction is not the product's.
        try save("o8", expires: 2_000)
        var upgrade = Purchase(
            transactionID: "to8b", originalTransactionID: "o8", productID: "premium", purchaseDate: 10, expiresDate: 3_000,
            environment: .production, subscriptionGroupID: "g")
        upgrade.commerce.storefront = "USA"
        _ = try receipts.save(
            VerifiedFacts(environment: .production, purchases: [Stated(upgrade, bundleID: "com.x", rawJSON: "{}")]), for: "uo8",
            now: 2)
        let store = MassExtensionStore(db)
        let all = try store.reached(by: Self.request(at: 1_000), after: nil, through: nil)
        #expect(all.map(\.original) == ["o1", "o4", "o7"])
        #expect(all.map(\.holder) == ["uo1", "uo4", "uo7"] && all.map(\.expiresAt) == [2_000, 2_000, 1_000])
        #expect(try store.reached(by: Self.request(at: 1_000), after: "o1", through: "o4").map(\.original) == ["o4"])
        let storefronts = try store.reached(by: Self.request(at: 1_000, storefronts: ["CAN", "GBR"]), after: nil, through: nil)
        #expect(storefronts.map(\.original) == ["o4"])
    }
}
