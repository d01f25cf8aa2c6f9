import AppStoreSimulator
import ArgumentParser
import DatabaseEngine
import Foundation
import FoundationEssentials
import Glibc
import JSON
import Logging
import Notifications
import Operations
import ReceiptCore
import ReceiptService
import Storage

/// `receiptd verify --receipt FILE`: one verification, as POST /v1/receipts does it (Apple or the
/// configured simulator, then storage); prints the subscriber document. Exit 1 with Apple's or
/// receiptd's error body on standard error when the receipt is refused.
struct Verify: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Verify one receipt with Apple, store it, and print the subscriber document.")
    @OptionGroup var options: GlobalOptions
    @Option(help: "The receipt: base64 text, or the raw bytes of an App Store receipt file.") var receipt: String
    @Option(name: .customLong("user"), help: "The app_user_id that owns it.") var appUserID = "receiptd-cli"

    func run() async throws {
        let (config, _) = try await options.load()
        guard let bytes = FileManager.default.contents(atPath: receipt) else {
            printError("receiptd: cannot read \(receipt)")
            throw ExitCode.failure
        }
        let data = Self.receiptData(Array(bytes))
        try await Admin.withApplication(config) { app throws(ReceiptError) in
            try await app.verifyPurchase(VerifyPurchase.Input(appUserID: appUserID, proof: .receipt(data)))
        } print: { snapshot in
            snapshot.document.rendered(version: snapshot.version, now: snapshot.now, explain: false)
        }
    }

    /// Base64 text as given (trimmed); anything else (a binary receipt) base64-encoded.
    static func receiptData(_ bytes: [UInt8]) -> String {
        let blank: Set<UInt8> = [0x20, 0x09, 0x0A, 0x0D]
        let trimmed = bytes.drop { blank.contains($0) }.reversed().drop { blank.contains($0) }.reversed()
        let alphabet = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=".utf8)
        let isBase64 = !trimmed.isEmpty && trimmed.allSatisfy { alphabet.contains($0) }
        return isBase64 ? String(decoding: trimmed, as: UTF8.self) : Data(bytes).base64EncodedString()
    }
}

/// `receiptd subscriber ID`: the stored document, as GET /v1/subscribers/{id} answers it.
struct Subscriber: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Print a subscriber's document from storage (no Apple call).")
    @OptionGroup var options: GlobalOptions
    @Argument(help: "The app_user_id.") var appUserID: String
    @Flag(help: "Add the explanation of every decision.") var explain = false

    func run() async throws {
        let (config, _) = try await options.load()
        try await Admin.withApplication(config) { app throws(ReceiptError) in
            try await app.readSubscriber.document(appUserID)
        } print: { [explain] snapshot in
            snapshot.document.rendered(version: snapshot.version, now: snapshot.now, explain: explain)
        }
    }
}

/// `receiptd erase ID`: what `DELETE /v1/subscribers/{id}` does, from the command line (the
/// audit row says "cli"). Safe while receiptd serves: the serving processes hear the change.
struct Erase: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Erase everything stored under an app_user_id (GDPR art. 17), then scrub the database file.")
    @OptionGroup var options: GlobalOptions
    @Argument(help: "The app_user_id.") var appUserID: String

    func run() async throws {
        let (config, _) = try await options.load()
        try await Admin.withApplication(config) { app throws(ReceiptError) in
            try await app.eraseSubscriber(appUserID, by: "cli")
        } print: { [appUserID] outcome in
            outcome.json(appUserID)
        }
    }
}

/// `receiptd backup PATH`: a consistent copy of the database while receiptd serves.
struct Backup: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Copy the database to PATH online (SQLite's backup API); safe while receiptd serves.")
    @OptionGroup var options: GlobalOptions
    @Argument(help: "The new file (never overwritten).") var path: String

    func run() async throws {
        let (config, _) = try await options.load()
        guard case .sqlite(let source)? = config.database.location else {
            printError(
                "receiptd: backup copies an SQLite database; back PostgreSQL up with its own tools (pg_dump, base backups)")
            throw ExitCode.failure
        }
        do {
            let report = try Operations.Backup(path: source, busyTimeout: config.database.busyTimeout)(to: path)
            print(
                "backed up \(source) to \(path): \(report.pages) pages in \(report.milliseconds) ms, "
                    + "integrity_check \(report.integrity)")
            guard report.isGood else { throw ExitCode.failure }
        } catch let exit as ExitCode {
            throw exit
        } catch {
            printError("receiptd: backup failed: \(error)")
            throw ExitCode.failure
        }
    }
}

enum Admin {
    /// One connection to the configured database, which must be migrated already (exit 1 when
    /// migrations are pending: `receiptd migrate` applies them).
    static func migratedDatabase(_ config: ServiceConfiguration) throws -> Database {
        let migrator = Migrator(migrations: try config.database.migrations())
        let database = try config.database.openConnection()
        guard try migrator.status(of: database).pending.isEmpty else {
            printError("receiptd: the database has pending migrations: run `receiptd migrate` first")
            throw ExitCode.failure
        }
        return database
    }

    /// The service without its HTTP server (the database, migrated; Apple's client or the
    /// simulator) for one use case: prints `render` of its result on standard output (exit 0), or
    /// the error's code and message on standard error (exit 1).
    static func withApplication<T: Sendable>(
        _ config: ServiceConfiguration, _ useCase: (Application) async throws(ReceiptError) -> T,
        print render: (T) -> JSONValue
    ) async throws {
        var config = config
        var quiet = Logger(label: "receiptd")
        quiet.logLevel = .error
        let simulator: AppStoreSimulator.Served?
        let app: Application
        do {
            simulator = try SimulatorWiring.start(&config, logger: quiet)
            app = try Application.open(configuration: config, logger: quiet)
        } catch {
            printError("receiptd: cannot open the service: \(error)")
            throw ExitCode.failure
        }
        let result: Result<T, ReceiptError>
        do {
            result = .success(try await useCase(app))
        } catch {
            result = .failure(error)
        }
        await app.stop()
        await simulator?.stop()
        switch result {
        case .success(let value):
            Swift.print(String(decoding: render(value).jsonBytes, as: UTF8.self))
        case .failure(let error):
            printError("receiptd: \(error.code): \(error.message)")
            throw ExitCode.failure
        }
    }
}

/// `receiptd backfill --since DATE [--until DATE]`: Get Notification History over the period,
/// each notification applied through the normal notification path (deduplicated: what is stored
/// already is not applied again). Prints what it did; exit 1 when any app's history could not be read.
struct Backfill: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Apply the App Store notifications Apple sent in a period (Get Notification History), once each.")
    @OptionGroup var options: GlobalOptions
    @Option(help: "Start, inclusive: YYYY-MM-DD (UTC midnight) or an RFC 3339 time. Apple keeps 180 days.")
    var since: String
    @Option(help: "End, exclusive: YYYY-MM-DD or an RFC 3339 time; now when absent.") var until: String?

    func run() async throws {
        let (config, _) = try await options.load()
        guard let start = FieldRules.instant(since) else {
            printError("receiptd: --since must be YYYY-MM-DD or an RFC 3339 time")
            throw ExitCode.failure
        }
        var end: Int64?
        if let until {
            guard let parsed = FieldRules.instant(until), parsed > start else {
                printError("receiptd: --until must be YYYY-MM-DD or an RFC 3339 time after --since")
                throw ExitCode.failure
            }
            end = parsed
        }
        guard config.appStore.hasServerAPIKey || config.appStore.simulator else {
            printError("receiptd: \(ReceiptError.notConfigured(.serverAPI).message)")
            throw ExitCode.failure
        }
        var failed = false
        try await Admin.withApplication(config) { app throws(ReceiptError) in
            let summary = await app.catchUp.catchUp(since: start, until: end)
            failed = summary.failed > 0
            return summary
        } print: { s in
            .object([
                "listed": .int(s.listed), "stored": .int(s.stored), "duplicates": .int(s.duplicates),
                "refused": .int(s.refused), "failed": .int(s.failed),
            ])
        }
        if failed { throw ExitCode.failure }
    }
}

/// `receiptd copy-data --from sqlite:PATH [--to postgresql://…]`: every row of an SQLite database
/// into the PostgreSQL one `--to` or `database.url` names (migrated first), then each table
/// compared by count and checksum. Idempotent and resumable (``DataCopy``); exit 1 when a table
/// differs. `--to` may not hold a password (a command line is visible to every user).
struct CopyData: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "copy-data",
        abstract: "Copy an SQLite database into PostgreSQL (--to, or RECEIPTD_DATABASE_URL), then compare every table.",
        discussion: """
            Copy from a stopped service or a `receiptd backup` file. Run it again to finish a copy that \
            was cut off; a finished copy run again copies nothing and compares again. The target is --to or \
            the database.url secret (RECEIPTD_DATABASE_URL or its _FILE). A --to URL may not hold a password, \
            since a command line is visible to every user of the machine: give it in PGPASSWORD or \
            ~/.pgpass (libpq reads both), or the whole URL in RECEIPTD_DATABASE_URL.
            """)
    @OptionGroup var options: GlobalOptions
    @Option(help: "The SQLite database: sqlite:PATH or PATH.") var from: String
    @Option(help: "The PostgreSQL database, postgresql://user@host/db without a password (default: database.url).")
    var to: String?

    func run() async throws {
        let (config, _) = try await options.load()
        let destination: DatabaseSettings.Location?
        if let to {
            guard !Self.holdsPassword(to) else {
                printError(
                    "receiptd: copy-data: --to holds a password, which every user of the machine can read in the process list; "
                        + "give it in PGPASSWORD or ~/.pgpass, or the whole URL in RECEIPTD_DATABASE_URL")
                throw ExitCode.failure
            }
            destination = DatabaseSettings.Location(url: to)
        } else {
            destination = config.database.location
        }
        guard case .postgresql(let url)? = destination else {
            printError("receiptd: copy-data needs a PostgreSQL target: --to postgresql://… or RECEIPTD_DATABASE_URL")
            throw ExitCode.failure
        }
        guard case .sqlite(let path) = DatabaseSettings.Location(url: from) ?? .sqlite(path: from) else {
            printError("receiptd: copy-data copies from SQLite (--from sqlite:PATH)")
            throw ExitCode.failure
        }
        do {
            guard FileManager.default.fileExists(atPath: path) else {
                printError("receiptd: copy-data: no SQLite database at \(path)")
                throw ExitCode.failure
            }
            let source = try Database(path: path, busyTimeout: config.database.busyTimeout, readOnly: true)
            let sqliteMigrations = Migrator(migrations: try config.database.migrations(for: .sqlite))
            guard try sqliteMigrations.status(of: source).pending.isEmpty else {
                printError("receiptd: copy-data: \(path) has pending migrations: run `receiptd migrate` on it first")
                throw ExitCode.failure
            }
            let target = try Database(postgresURL: url)
            for migration in try Migrator(migrations: try config.database.migrations(for: .postgresql)).migrate(target) {
                print("applied \(migration.name) to PostgreSQL")
            }
            let tables = try DataCopy(from: source, to: target).run()
            print("table                 copied   source rows  target rows  checksum")
            for t in tables {
                let name = t.name.padding(toLength: 20, withPad: " ", startingAt: 0)
                print(
                    "\(name)  \(pad(t.copied, 8))  \(pad(t.sourceRows, 11))  \(pad(t.targetRows, 11))  "
                        + (t.matches ? "same (\(t.sourceChecksum.prefix(12))…)" : "DIFFERS"))
            }
            guard tables.allSatisfy(\.matches) else {
                printError("receiptd: copy-data: some tables differ (rows changed in the source after they were copied?)")
                throw ExitCode.failure
            }
            print("copied: every table matches")
        } catch let exit as ExitCode {
            throw exit
        } catch {
            printError("receiptd: copy-data failed: \(error)")
            throw ExitCode.failure
        }
    }

    /// Whether a libpq URL names a password (`user:password@` or `?password=`).
    static func holdsPassword(_ url: String) -> Bool {
        guard let components = URLComponents(string: url) else { return url.contains("password") }
        return components.password != nil || components.queryItems?.contains { $0.name == "password" } == true
    }

    private func pad(_ n: Int, _ width: Int) -> String {
        let text = String(n)
        return String(repeating: " ", count: max(0, width - text.count)) + text
    }
}
