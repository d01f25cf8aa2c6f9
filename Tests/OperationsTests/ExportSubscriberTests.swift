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
            environment: .sandbox,
            purchases: (0..<n).map { i in
                Stated(
                    Purchase(
                        transactionID: "\(original)-\(i)", originalTransactionID: original, productID: "monthly",
                        purchaseDate: 1_000 + Int64(i), expiresDate: 2_000 + Int64(i), environment: .sandbox),
                    bundleID: "b", rawJSON: #"{"i":\#(i),"password":"not-for-export"}"#)
            })
    }

    @Test func everyTableComesInPagesWithEveryRowOnceAndSecretsRedacted() async throws {
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
            let export = try await ExportSubscriber(
                context: .testing(queue, clock: WallClock { 10_000 }, state: state), pageSize: 5)("u")
            #expect(export.appUserID == "u" && export.aliases.isEmpty && export.exportedAt == 10_000)
            #expect(export.subscriber != nil)
            var pages: [ExportSubscriber.Page] = []
            while let page = try await export.pages() { pages.append(page) }
            #expect(try await export.pages() == nil)
            // Each table once, opened by its first page and closed by its last, in pages of 5.
            var tables: [String] = []
            for page in pages where page.isFirst { tables.append(page.table) }
            #expect(tables == Array(Set(tables)).sorted { tables.firstIndex(of: $0)! < tables.firstIndex(of: $1)! })
            #expect(pages.filter(\.isLast).map(\.table) == tables)
            #expect(pages.allSatisfy { $0.rows.count <= 5 })
            let transactions = pages.filter { $0.table == "transactions" }
            #expect(transactions.count == 5, "23 rows in pages of 5")
            let rows = transactions.flatMap(\.rows)
            func value(_ row: ExportSubscriber.Row, _ column: String) -> ExportSubscriber.Value? {
                row.first { $0.column == column }?.value
            }
            #expect(
                rows.compactMap { if case .text(let id)? = value($0, "transaction_id") { id } else { nil } }
                    == (0..<23).map { "o1-\($0)" }.sorted())
            #expect(
                rows.allSatisfy {
                    if case .json(let raw)? = value($0, "raw_json") {
                        raw["password"]?.string == ExportSubscriber.redacted
                    } else {
                        false
                    }
                })
            #expect(!pages.flatMap(\.rows).contains { $0.contains { "\($0.value)".contains("o2") } })
        }
    }
}
