import Dispatch
import Glibc
import HTTPServer
import Logging
import Storage

/// receiptd's running service: the database (migrated before anything binds), the routes, and
/// the HTTP server, with graceful shutdown on SIGTERM/SIGINT.
public final class Application: Sendable {
    public let configuration: ServiceConfiguration
    public let database: DatabaseQueue
    public let migrator: Migrator
    public let server: HTTPServer
    private let logger: Logger

    /// Opens the database and applies pending migrations; throws (and nothing binds) when the
    /// database has unknown or edited migrations.
    public init(configuration: ServiceConfiguration, logger: Logger) throws {
        self.configuration = configuration
        self.logger = logger
        migrator = Migrator(migrations: try Migration.load(from: configuration.database.migrationsDirectory))
        database = try DatabaseQueue(path: configuration.database.path, busyTimeout: configuration.database.busyTimeout)
        let applied = try database.runBlocking { [migrator] db in try migrator.migrate(db) }
        for migration in applied {
            logger.info("migration applied", metadata: ["migration": "\(migration.name)"])
        }
        let routes = Routes(database: database, migrator: migrator)
        server = HTTPServer(configuration: configuration.http, responder: routes.router(), logger: logger)
    }

    /// Binds and serves; returns the bound port.
    @discardableResult
    public func start() throws -> Int {
        let port = try server.start()
        logger.info(
            "receiptd ready",
            metadata: [
                "version": "\(BuildInfo.version)", "environment": "\(configuration.environment)",
                "database": "\(configuration.database.path)", "port": "\(port)",
            ])
        return port
    }

    /// Serves until SIGTERM or SIGINT, then shuts down gracefully and returns.
    public func runUntilSignalled() async throws {
        let signals = SignalWatcher(signals: [SIGTERM, SIGINT]) { [server, logger] signal in
            logger.info("signal received", metadata: ["signal": "\(signal)"])
            server.shutdown()
        }
        try start()
        await server.waitUntilStopped()
        signals.cancel()
    }
}

/// Turns SIGTERM/SIGINT into a callback (the default action would kill the process, and as PID 1
/// in a container there is no default action at all).
final class SignalWatcher: @unchecked Sendable {  // sources are set once in init; cancel() is thread-safe
    private let sources: [any DispatchSourceSignal]

    init(signals: [Int32], handler: @escaping @Sendable (Int32) -> Void) {
        let queue = DispatchQueue(label: "receiptd.signals")
        sources = signals.map { signal in
            Glibc.signal(signal, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: signal, queue: queue)
            source.setEventHandler { handler(signal) }
            source.resume()
            return source
        }
    }

    func cancel() {
        for source in sources { source.cancel() }
    }
}
