import AppStoreSimulator
import ArgumentParser
import Clocks
import DatabaseEngine
import FoundationEssentials
import Glibc
import GooglePlaySimulator
import Logging
import ReceiptCore
import ReceiptService
import Storage

/// `receiptd`: serve (default), migrate, rederive, verify, subscriber, erase, backup, backfill, check-config, copy-data, simulate, version.
@main
struct ReceiptdCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "receiptd",
        abstract: "Self-hosted App Store receipt validation and entitlements.",
        subcommands: [
            Serve.self, Migrate.self, Rederive.self, Verify.self, Subscriber.self, Erase.self, Backup.self, Backfill.self,
            CheckConfig.self,
            CopyData.self, Rates.self, BackfillPricesCommand.self, BuildRollupsCommand.self, ExportDataCommand.self,
            Simulate.self, WebhookSinkCommand.self,
            Version.self,
        ],
        defaultSubcommand: Serve.self)
}

/// Options every subcommand shares.
struct GlobalOptions: ParsableArguments {
    @Option(name: .customLong("config-dir"), help: "Folder with default.json and <environment>.json.")
    var configDirectory: String = ProcessInfo.processInfo.environment["RECEIPTD_CONFIG_DIR"] ?? "Config"

    /// Loads the configuration, printing the offending key and exiting 78 (EX_CONFIG) if invalid.
    func load() async throws -> (ServiceConfiguration, ConfigLoader) {
        do {
            return try await ServiceConfiguration.load(configDirectory: configDirectory)
        } catch {
            printError("receiptd: invalid configuration: \(error)")
            throw ExitCode(78)
        }
    }
}

/// Bootstraps swift-log once, at the configured level and format (`log.format`), to standard error.
enum Logging {
    static func bootstrap(_ config: ServiceConfiguration) -> Logger {
        let (level, json) = (config.logLevel, config.logFormat == "json")
        LoggingSystem.bootstrap { label in
            if json { return JSONLogHandler(label: label, level: level) }
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        return Logger(label: "receiptd")
    }
}

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Migrate the database, then serve HTTP until SIGTERM/SIGINT.")
    @OptionGroup var options: GlobalOptions

    func run() async throws {
        var (config, _) = try await options.load()
        let logger = Logging.bootstrap(config)
        do {
            let simulator = try SimulatorWiring.start(&config, logger: logger)
            let googlePlay = try SimulatorWiring.startGooglePlay(&config, logger: logger)
            let app = try Application.open(configuration: config, logger: logger)
            try await app.run(before: (simulator.map { [$0.server] } ?? []) + (googlePlay.map { [$0.server] } ?? []))
        } catch {
            logger.critical("receiptd cannot start", metadata: ["error": "\(error)"])
            throw ExitCode.failure
        }
    }
}

struct Migrate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Apply pending migrations, or list them with --dry-run.")
    @OptionGroup var options: GlobalOptions
    @Flag(help: "Print what would be applied; change nothing.") var dryRun = false

    func run() async throws {
        let (config, _) = try await options.load()
        do {
            let migrator = Migrator(migrations: try config.database.migrations())
            let database = try config.database.openConnection()
            let migrations = try migrator.migrate(database, dryRun: dryRun)
            let verb = dryRun ? "would apply" : "applied"
            if migrations.isEmpty { print("up to date: no pending migrations") }
            for migration in migrations { print("\(verb) \(migration.name) (sha256 \(migration.checksum.prefix(12))…)") }
        } catch {
            printError("receiptd: migrate failed: \(error)")
            throw ExitCode.failure
        }
    }
}

struct Rederive: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Recompute every subscriber's state and events from the stored Apple payloads; print what changed.",
        discussion: "Each subscriber is its own short transaction, so this is safe while receiptd serves.")
    @OptionGroup var options: GlobalOptions
    @Flag(help: "Report what would change; change nothing.") var dryRun = false

    func run() async throws {
        let (config, _) = try await options.load()
        do {
            let database = try Admin.migratedDatabase(config)
            let monotonic = SystemMonotonicClock()
            let started = monotonic.now
            let report = try Rederivation(settings: config.entitlementSettings).run(
                database, now: WallClock.system.now(), dryRun: dryRun
            ) { change in
                print("\(dryRun ? "would change" : "changed") \(change)")
            }
            let ms = (monotonic.now - started).milliseconds
            print("rederived \(report) in \(ms) ms\(dryRun ? " (dry run: nothing written)" : "")")
        } catch let exit as ExitCode {
            throw exit
        } catch {
            printError("receiptd: rederive failed: \(error)")
            throw ExitCode.failure
        }
    }
}

struct CheckConfig: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check-config", abstract: "Validate the configuration and print the effective values, secrets redacted.")
    @OptionGroup var options: GlobalOptions

    func run() async throws {
        let (_, loader) = try await options.load()
        let width = loader.entries.map(\.key.count).max() ?? 0
        for entry in loader.entries {
            let pad = String(repeating: " ", count: width - entry.key.count)
            print("\(entry.key)\(pad)  \(entry.value)")
        }
    }
}

struct Version: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Print receiptd's version and its libraries'.")
    func run() {
        print("receiptd \(BuildInfo.version) (libcurl \(BuildInfo.curlVersion), SQLite \(BuildInfo.sqliteVersion))")
    }
}

/// Writes one line to standard error.
func printError(_ line: String) {
    let bytes = Array((line + "\n").utf8)
    bytes.withUnsafeBytes { _ = write(2, $0.baseAddress, $0.count) }
}
