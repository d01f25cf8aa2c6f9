import DatabaseEngine
import Entitlements
import Foundation
import ReceiptTesting
import Storage
import Testing

@testable import Operations

private let day: Int64 = 86_400_000

/// A scratch folder's gzip file, decompressed by Debian's `gzip` (what a warehouse loader reads).
private func gunzip(_ path: String) throws -> String {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/bin/gzip")
    process.arguments = ["-dc", path]
    let out = Pipe()
    process.standardOutput = out
    try process.run()
    let data = out.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    #expect(process.terminationStatus == 0)
    return String(decoding: data, as: UTF8.self)
}

@Suite("Warehouse export")
struct ExportDataTests {
    @Test func linesAreExactNDJSONAndRFC4180() {
        let table = ExportStore.subscribers
        let row: [ExportStore.Value] = [.text("a,\"b\"\n"), .integer(-5), .null, .integer(-7)]
        #expect(
            String(decoding: ExportData.jsonLine(table, row), as: UTF8.self)
                == #"{"app_user_id":"a,\"b\"\n","created_at":-5,"updated_at":null,"first_seen_at":-7}"# + "\n")
        #expect(String(decoding: ExportData.csvLine(row), as: UTF8.self) == "\"a,\"\"b\"\"\n\",-5,,-7\r\n")
        // Null is an empty field, an empty text a quoted one; a leading = is data, not a formula.
        #expect(String(decoding: ExportData.csvLine([.text(""), .null, .text("=1")]), as: UTF8.self) == "\"\",,=1\r\n")
        #expect(
            String(decoding: ExportData.csvHeader(table), as: UTF8.self) == "app_user_id,created_at,updated_at,first_seen_at\r\n")
    }

    @Test(arguments: await testDialects())
    func oneFilePerTableAndDayOfWritingWithMoneyAndNothingElse(dialect: Database.Dialect) async throws {
        let db = try await migratedDatabase(dialect)
        let store = ReceiptStore(db)
        let start = CivilTime.days(year: 2026, month: 11, day: 1) * day
        // Three purchases written on two days, two of them in the same millisecond.
        for (i, at) in [(1, start + 1000), (2, start + day + 5), (3, start + day + 5)] {
            var purchase = Purchase(
                transactionID: "t\(i)", originalTransactionID: "t\(i)", productID: "monthly", purchaseDate: at,
                expiresDate: at + 30 * day,
                commerce: Commerce(price: Price(milliunits: 9990, currency: "EUR", source: .store), storefront: "DEU"))
            purchase.environment = .production
            _ = try store.save(
                VerifiedFacts(
                    environment: .production,
                    purchases: [Stated(purchase, bundleID: "com.x", rawJSON: #"{"secret":"raw"}"#)],
                    statedAt: at), for: "u\(i)", now: at)
        }
        try await withScratchDirectory("export") { dir in
            // One row a page: each page goes on after the last row's time and key.
            let summary = try ExportData(database: db, page: 1)(since: start, until: start + 2 * day, format: .ndjson, into: dir)
            #expect(summary["transactions"] == .init(rows: 3, files: 2))
            #expect(summary["subscribers"]?.rows == 3)
            let first = try gunzip(dir + "/transactions/2026-11-01.ndjson.gz")
            let second = try gunzip(dir + "/transactions/2026-11-02.ndjson.gz").split(separator: "\n")
            #expect(second.count == 2 && second[0].contains(#""transaction_id":"t2""#) && second[1].contains(#""t3""#))
            let row = try #require(try JSONSerialization.jsonObject(with: Data(first.utf8)) as? [String: Any])
            #expect(
                row["price"] as? Int == 9990 && row["currency"] as? String == "EUR" && row["price_source"] as? String == "store")
            #expect(row["app_user_id"] as? String == "u1" && row["storefront"] as? String == "DEU")
            #expect(!first.contains("secret"), "no raw payloads")
            #expect(row.count == ExportStore.transactions.columns.count)
            let schema = try #require(
                try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: dir + "/schema.json")))
                    as? [String: Any])
            let tables = schema["tables"] as? [String: Any]
            #expect((tables?["transactions"] as? [String: Any])?["key"] as? String == "transaction_id")
            #expect(!FileManager.default.fileExists(atPath: dir + "/transactions/2026-11-03.ndjson.gz"))
            #expect(
                try FileManager.default.contentsOfDirectory(atPath: dir + "/transactions").sorted() == [
                    "2026-11-01.ndjson.gz", "2026-11-02.ndjson.gz",
                ])

            // Run again as CSV over the second day only: that day's file, nothing partial left.
            let again = try ExportData(database: db)(since: start + day, until: start + 2 * day, format: .csv, into: dir)
            #expect(again["transactions"] == .init(rows: 2, files: 1))
            let csv = try gunzip(dir + "/transactions/2026-11-02.csv.gz")
            #expect(csv.hasPrefix("transaction_id,original_transaction_id,app_user_id,store,"))
            #expect(csv.components(separatedBy: "\r\n").count == 4)  // header, two rows, the final line break
        }
    }
}
