import ArgumentParser
import FoundationEssentials
import JSON
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
                let migrator = Migrator(migrations: try config.database.migrations())
                let database = try config.database.openConnection()
                guard try migrator.status(of: database).pending.isEmpty else {
                    printError("receiptd: the database has pending migrations: run `receiptd migrate` first")
                    throw ExitCode.failure
                }
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
