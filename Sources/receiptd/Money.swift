import ArgumentParser
import Charts
import Clocks
import FoundationEssentials
import JSON
import Operations
import ReceiptCore
import ReceiptService
import Storage

// The money commands (Docs/analytics.md): exchange rates, prices from Apple's history, the
// warehouse export.

/// `receiptd rates import FILE`: exchange rates for the charts, from a file the operator
/// downloaded (receiptd never fetches them: the machine may be offline).
struct Rates: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Exchange rates for the charts' reporting currency.", subcommands: [Import.self])

    struct Import: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Load the ECB's euro reference rates (eurofxref-hist.csv or eurofxref.csv, unzipped).",
            discussion: """
                Download from https://www.ecb.europa.eu/stats/policy_and_exchange_rates/euro_reference_exchange_rates/html/index.en.html \
                (the CSV inside eurofxref-hist.zip). Loading again is safe: a day already loaded is replaced only where it differs.
                """)
        @OptionGroup var options: GlobalOptions
        @Argument(help: "The CSV file.") var file: String

        func run() async throws {
            let (config, _) = try await options.load()
            guard let data = FileManager.default.contents(atPath: file) else {
                printError("receiptd: cannot read \(file)")
                throw ExitCode.failure
            }
            do {
                let database = try Admin.migratedDatabase(config)
                let r = try ImportRates.run(csv: String(decoding: data, as: UTF8.self), into: database)
                print(
                    "loaded \(r.rates) rates of \(r.currencies) currencies from \(r.firstDay ?? "-") to \(r.lastDay ?? "-"): \(r.changed) new or changed"
                )
            } catch let exit as ExitCode {
                throw exit
            } catch {
                printError("receiptd: rates import failed: \(error)")
                throw ExitCode.failure
            }
        }
    }
}

/// `receiptd backfill-prices`: Get Transaction History once per App Store purchase that no store
/// has priced (verifyReceipt states no money), paced by the Server API rate limiter; resumable.
/// Prints what it did; exit 1 when it stopped early or a history could not be read.
struct BackfillPricesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "backfill-prices",
        abstract: "Price stored verifyReceipt purchases from Apple's transaction history (Get Transaction History).",
        discussion: """
            Each purchase is asked about once: stopped part-way, a run again goes on where it left off, and a later run \
            asks only about new purchases. A price from Apple's history replaces none or the client's, never a signed one.
            """)
    @OptionGroup var options: GlobalOptions
    @Flag(help: "Ask again about unpriced purchases asked about before.") var again = false
    @Option(help: "Ask about at most this many purchases.") var limit: Int?

    func run() async throws {
        let (config, _) = try await options.load()
        if let limit, limit < 1 {
            printError("receiptd: --limit must be at least 1")
            throw ExitCode.failure
        }
        var incomplete = false
        try await Admin.withApplication(config) { app throws(ReceiptError) in
            let summary = try await app.backfillPrices(again: again, limit: limit ?? .max)
            incomplete = summary.failed > 0 || summary.stoppedBecause != nil
            return summary
        } print: { s in
            var o: [Identifier: JSONValue] = [
                "asked": .int(s.asked), "priced": .int(s.priced), "subscribers": .int(s.subscribers),
                "unknown": .int(s.unknown), "failed": .int(s.failed),
            ]
            if let reason = s.stoppedBecause { o["stopped"] = .string(reason) }
            return .object(o)
        }
        if incomplete { throw ExitCode.failure }
    }
}

/// `receiptd build-rollups`: brings the chart rollups up to date now, in the foreground (after a
/// bulk load, a rates import or a settings change), instead of waiting for a serving instance's
/// keeper to do it in the background. Prints the holders rebuilt and the changes applied.
struct BuildRollupsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "build-rollups",
        abstract: "Bring the chart rollups up to date now (a serving instance also keeps them, in the background).",
        discussion: """
            Rebuilds them when the analytics settings, the loaded rates or the rollup format changed, then applies the \
            change log. Safe while receiptd serves: instances take turns.
            """)
    @OptionGroup var options: GlobalOptions

    func run() async throws {
        let (config, _) = try await options.load()
        let start = ContinuousClock.now
        try await Admin.withApplication(config) { app throws(ReceiptError) in
            // Every core: nothing else waits on this process.
            try await app.rollups.computing(on: ProcessInfo.processInfo.activeProcessorCount).catchUp()
        } print: { done in
            let elapsed = ContinuousClock.now - start
            let ms = elapsed.components.seconds * 1000 + elapsed.components.attoseconds / 1_000_000_000_000_000
            return .object(["holders": .int(done.holders), "changes": .int(done.changes), "ms": .int(Int(ms))])
        }
    }
}

/// `receiptd export-data --since DATE DIR`: transactions (with money), events and subscribers
/// written in a period, as gzip NDJSON or CSV, one file per table and day, for a warehouse
/// (Docs/export.md). Prints the rows and files per table.
struct ExportDataCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export-data",
        abstract: "Write transactions, events and subscribers as gzip NDJSON or CSV, one file per table and day.",
        discussion: """
            A row is in the file of the UTC day it was last written; run again, an export replaces the files of the \
            days it covers. DIR/schema.json names each table's columns and key (Docs/export.md).
            """)
    @OptionGroup var options: GlobalOptions
    @Option(help: "Rows written from: YYYY-MM-DD (UTC midnight) or an RFC 3339 time.") var since: String
    @Option(help: "Rows written before: YYYY-MM-DD or an RFC 3339 time; now when absent.") var until: String?
    @Option(help: "ndjson or csv.") var format = "ndjson"
    @Argument(help: "The folder to write into (created when missing).") var directory: String

    func run() async throws {
        let (config, _) = try await options.load()
        guard let start = FieldRules.instant(since) else {
            printError("receiptd: --since must be YYYY-MM-DD or an RFC 3339 time")
            throw ExitCode.failure
        }
        let end = until.flatMap(FieldRules.instant) ?? WallClock.system.now()
        guard until == nil || FieldRules.instant(until!) != nil, end > start else {
            printError("receiptd: --until must be YYYY-MM-DD or an RFC 3339 time after --since")
            throw ExitCode.failure
        }
        guard let chosen = ExportData.Format(rawValue: format) else {
            printError("receiptd: --format must be ndjson or csv")
            throw ExitCode.failure
        }
        let database = try Admin.migratedDatabase(config)
        do {
            let summary = try ExportData(database: database)(since: start, until: end, format: chosen, into: directory)
            var tables: [Identifier: JSONValue] = [:]
            for (name, s) in summary { tables[Identifier(name)] = .object(["rows": .int(s.rows), "files": .int(s.files)]) }
            print(String(decoding: JSONValue.object(tables).jsonBytes, as: UTF8.self))
        } catch {
            printError("receiptd: export-data: \(error)")
            throw ExitCode.failure
        }
    }
}
