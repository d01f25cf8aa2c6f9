import Clocks
import DatabaseEngine
import Entitlements
import Foundation
import Identifiers
import JSON
import Logging
import ReceiptCore
import ReceiptTesting
import Storage
import Testing

@testable import Operations

@Suite("Exporting a person's data")
struct ExportSubscriberTests {
    /// `n` renewals of one subscription for `user`: `n` transaction rows.
    private func renewals(_ n: Int, original: String) -> VerifiedFacts {
        VerifiedFacts(
            environment: "sandbox",
            purchases: (0..<n).map { i in
                Stated(
                    Purchase(
                        transactionID: "\(original)-\(i)", originalTransactionID: original, productID: "monthly",
                        purchaseDate: 1_000 + Int64(i), expiresDate: 2_000 + Int64(i), environment: "sandbox"),
                    bundleID: "b", rawJSON: #"{"i":\#(i),"password":"not-for-export"}"#)
            })
    }

    @Test func pagesJoinIntoOneDocumentWithEveryRowOnceAndThePartsStayPageSized() async throws {
        try await withScratchDirectory("receiptd-export") { dir in
            let queue = try DatabaseQueue(path: dir + "/db.sqlite")
            try queue.runBlocking { db in
                _ = try Migrator(migrations: try Migration.load(from: migrationsDirectory)).migrate(db)
                _ = try ReceiptStore(db).save(renewals(23, original: "o1"), for: "u", now: 5)
                _ = try ReceiptStore(db).save(renewals(4, original: "o2"), for: "other", now: 6)
            }
            let state = SubscriberState(
                settings: EntitlementSettings(
                    rules: EntitlementRules(["pro": ["monthly"]]), catalog: Catalog(), policy: DerivationPolicy()))
            let export = ExportSubscriber(
                context: .testing(queue, clock: WallClock { 10_000 }, state: state), pageSize: 5)
            let parts = try await export("u")
            var bytes: [UInt8] = []
            var count = 0
            while let part = try await parts.next() {
                bytes += part
                count += 1
            }
            #expect(try await parts.next() == nil)
            let document = try JSONValue.parse(bytes)
            guard case .array(let transactions)? = document["tables"]?["transactions"] else {
                Issue.record("no transactions in \(String(decoding: bytes, as: UTF8.self))")
                return
            }
            #expect(transactions.compactMap { $0["transaction_id"]?.string } == (0..<23).map { "o1-\($0)" }.sorted())
            #expect(transactions.allSatisfy { $0["raw_json"]?["password"]?.string == ExportSubscriber.redacted })
            #expect(count > 23 / 5, "the transactions came in pages of 5, each its own part")
            #expect(!String(decoding: bytes, as: UTF8.self).contains("o2"))
        }
    }
}
