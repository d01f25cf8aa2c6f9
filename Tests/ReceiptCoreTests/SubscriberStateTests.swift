import Entitlements
import Foundation
import ReceiptTesting
import Storage
import Testing

@testable import ReceiptCore

@Suite("Subscriber state over time")
struct SubscriberStateTests {
    private static let day: Int64 = 86_400_000

    @Test func anExpiryNobodyPostedBumpsTheVersionAndRecordsTheExpirationOnTheNextRead() async throws {
        let dir = NSTemporaryDirectory() + "receiptd-state-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().path
        let queue = try DatabaseQueue(path: dir + "/db.sqlite")
        let t0: Int64 = 1_700_000_000_000
        try queue.runBlocking { db in
            _ = try Migrator(migrations: try Migration.load(from: root + "/Migrations")).migrate(db)
            let receipt = VerifiedReceiptRecord(
                environment: "sandbox",
                transactions: [
                    TransactionRecord(
                        transactionID: "t1", originalTransactionID: "o1", productID: "monthly", bundleID: "b",
                        environment: "sandbox", purchaseDate: t0, expiresDate: t0 + 30 * Self.day, rawJSON: "{}")
                ],
                renewals: [
                    RenewalRecord(originalTransactionID: "o1", autoRenewStatus: false, environment: "sandbox", rawJSON: "{}")
                ],
                latestReceipt: nil)
            _ = try ReceiptStore(db).save(receipt, for: "u", policy: .transfer, now: t0 + Self.day)
        }
        let state = SubscriberState(
            settings: EntitlementSettings(
                rules: EntitlementRules(["pro": ["monthly"]]), catalog: Catalog(), policy: DerivationPolicy()))
        let during = try #require(try await state.current("u", database: queue, now: t0 + 2 * Self.day))
        #expect(during.1 == 1)
        #expect(try await state.current("u", database: queue, now: t0 + 3 * Self.day)?.1 == 1)  // nothing changed
        let after = try #require(try await state.current("u", database: queue, now: t0 + 31 * Self.day))
        #expect(after.1 == 2)
        #expect((after.0.content["entitlements"]?["pro"]?["active"]) == .bool(false))
        let types = try await queue.run { db in try EventStore(db).page(for: "u", limit: 10, before: nil).map(\.type) }
        #expect(types == ["expiration", "cancellation", "initial_purchase"])
        #expect(try await state.current("nobody", database: queue, now: t0) == nil)
    }
}
