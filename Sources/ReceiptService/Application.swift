import AppStore
import AppStoreSimulator
import Dispatch
import Entitlements
import FoundationEssentials
import Glibc
import HTTPServer
import JSON
import Logging
import SignedData
import Storage

/// receiptd's running service: the database (migrated before anything binds), the routes, and
/// the HTTP server, with graceful shutdown on SIGTERM/SIGINT.
public final class Application: Sendable {
    public let configuration: ServiceConfiguration
    public let database: DatabaseQueue
    public let migrator: Migrator
    public let server: HTTPServer
    private let logger: Logger
    private let transport: CurlMultiTransport
    /// The built-in App Store simulator, when `appStore.simulator` is on.
    private let simulator: HTTPServer?

    /// The background refresher (started with the server when `refresher.enabled`).
    let refresher: Refresher
    /// Rendered documents for GET /v1/subscribers/{id}.
    let documentCache: SubscriberCache
    /// Receipts and subscribers, also for the command line (``verify(receiptData:appUserID:)``).
    private let receipts: ReceiptProcessor

    /// Opens the database and applies pending migrations; throws (and nothing binds) when the
    /// database has unknown or edited migrations. `now` (epoch ms) is injectable for tests; the
    /// built-in simulator shares it.
    public convenience init(configuration: ServiceConfiguration, logger: Logger) throws {
        try self.init(configuration: configuration, logger: logger, now: { Int64(Date().timeIntervalSince1970 * 1000) })
    }

    init(configuration: ServiceConfiguration, logger: Logger, now: @escaping @Sendable () -> Int64) throws {
        self.configuration = configuration
        self.logger = logger
        migrator = Migrator(migrations: try Migration.load(from: configuration.database.migrationsDirectory))
        let telemetry = Telemetry()
        database = try DatabaseQueue(
            path: configuration.database.path, busyTimeout: configuration.database.busyTimeout, metrics: telemetry.factory)
        let applied = try database.runBlocking { [migrator] db in try migrator.migrate(db) }
        for migration in applied {
            logger.info("migration applied", metadata: ["migration": "\(migration.name)"])
        }
        let settings = configuration.appStore
        var productionURL = settings.productionURL
        var sandboxURL = settings.sandboxURL
        if settings.simulator {
            // Offline development: Apple is the built-in simulator on a loopback port of its own.
            let simulator = HTTPServer(
                configuration: HTTPServerConfiguration(host: "127.0.0.1", port: 0, eventLoops: 1, accessLog: false),
                responder: AppStoreSimulator(
                    configuration: .init(bundleID: settings.bundleIDs[0], sharedSecret: settings.sharedSecret), now: now),
                logger: logger)
            let port = try simulator.start()
            productionURL = "http://127.0.0.1:\(port)/production/verifyReceipt"
            sandboxURL = "http://127.0.0.1:\(port)/sandbox/verifyReceipt"
            self.simulator = simulator
            logger.notice("App Store simulator in use; receipts are verified offline", metadata: ["port": "\(port)"])
        } else {
            self.simulator = nil
        }
        transport = CurlMultiTransport(
            configuration: .init(
                connectTimeout: settings.connectTimeout, maxResponseBytes: settings.maxResponseBytes,
                allowHTTP: settings.allowHTTP || settings.simulator))
        let breaker = SharedCircuitBreaker(policy: settings.breaker) { [logger] state in
            switch state {
            case .open(_, let backoff):
                logger.error(
                    "App Store circuit breaker open: receipts fail fast with 503 until a probe succeeds",
                    metadata: ["pause_ms": "\(backoff.components.seconds * 1000)"])
            case .halfOpen: logger.notice("App Store circuit breaker half-open: probing Apple")
            case .closed: logger.notice("App Store circuit breaker closed: Apple answers again")
            }
        }
        let client = VerifyReceiptClient(
            configuration: .init(
                productionURL: productionURL, sandboxURL: sandboxURL, sharedSecret: settings.sharedSecret,
                policy: VerifyReceiptPolicy(
                    maxRetries: settings.maxRetries, attemptTimeout: settings.attemptTimeout, deadline: settings.deadline)),
            transport: transport, breaker: breaker, limit: ConcurrencyLimit(settings.maxConcurrentCalls),
            metrics: AppStoreMetrics(factory: telemetry.factory))
        var publicKeys = configuration.api.publicKeys
        var secretKeys = configuration.api.secretKeys
        if configuration.environment == "development" && publicKeys.isEmpty && secretKeys.isEmpty {
            publicKeys = ["dev-public-key"]
            secretKeys = ["dev-secret-key"]
            logger.warning("No API keys configured: development keys dev-public-key and dev-secret-key are in use")
        }
        let signed = settings.signedData
        let verifier = SignedDataVerifier(
            configuration: .init(
                roots: signed.roots, bundleIDs: settings.bundleIDs, appAppleIDs: signed.appAppleIDs,
                environments: signed.environments, validationTime: signed.validationTime),
            now: now)
        if signed.environments.contains(.production) && signed.appAppleIDs.isEmpty {
            logger.warning("appStore.appAppleIds is empty: production V2 notifications will be refused as wrong_app")
        }
        let state = SubscriberState(settings: configuration.entitlementSettings)
        let policy = OwnershipPolicy(rawValue: configuration.api.ownershipPolicy) ?? .transfer
        documentCache = SubscriberCache(capacity: configuration.database.documentCache)
        receipts = ReceiptProcessor(
            client: client, verifier: verifier, database: database, bundleIDs: settings.bundleIDs, state: state,
            policy: policy, logger: logger, now: now, cache: documentCache)
        let notifications = NotificationProcessor(
            verifier: verifier, database: database, bundleIDs: settings.bundleIDs, sharedSecret: settings.sharedSecret,
            state: state, policy: policy, logger: logger, now: now, metrics: telemetry.factory)
        let routes = Routes(
            database: database, migrator: migrator, auth: APIAuth(publicKeys: publicKeys, secretKeys: secretKeys),
            receipts: receipts, notifications: notifications,
            sharedReceipts: SharedReceipts(database: database, logger: logger), appStore: client,
            limiter: RateLimiter(configuration.limits), telemetry: telemetry, documentCache: documentCache,
            metricsRequireKey: configuration.api.metricsRequireKey,
            openAPI: Self.openAPIDocument(configuration.openAPIFile, logger: logger), now: now)
        var router = routes.router()
        router.metrics = telemetry.http
        server = HTTPServer(configuration: configuration.http, responder: router, logger: logger, metrics: telemetry.http)
        telemetry.watch(server)
        refresher = Refresher(
            settings: configuration.refresher, client: client, database: database, state: state, bundleIDs: settings.bundleIDs,
            logger: logger, now: now, metrics: telemetry.factory)
    }

    /// The OpenAPI document's bytes, read once; nil (GET /openapi.yaml answers 404) when unreadable.
    static func openAPIDocument(_ path: String, logger: Logger) -> [UInt8]? {
        guard let data = FileManager.default.contents(atPath: path) else {
            logger.warning("OpenAPI document not found: GET /openapi.yaml answers 404", metadata: ["path": "\(path)"])
            return nil
        }
        return Array(data)
    }

    /// For `receiptd verify`: what POST /v1/receipts answers for `receiptData` (base64) posted by
    /// `appUserID`, stored the same way; no server needs to run.
    public func verify(receiptData: String, appUserID: String) async -> (status: Int, body: [UInt8]) {
        let body = JSONValue.object(["app_user_id": .string(appUserID), "receipt_data": .string(receiptData)]).jsonBytes
        let response = await receipts.post(Self.request(.post, "/v1/receipts", body: body), requestID: "cli")
        return (response.status.code, response.body)
    }

    /// For `receiptd subscriber`: what GET /v1/subscribers/{id} answers.
    public func subscriber(_ appUserID: String, explain: Bool) async -> (status: Int, body: [UInt8]) {
        let target = "/v1/subscribers/-" + (explain ? "?explain=true" : "")
        let response = await receipts.subscriber(appUserID, request: Self.request(.get, target), requestID: "cli")
        return (response.status.code, response.body)
    }

    private static func request(_ method: HTTPMethod, _ target: String, body: [UInt8] = []) -> HTTPRequest {
        HTTPRequest(
            method: method, target: target, version: .http1_1,
            headers: ["Content-Type": "application/json", "Content-Length": String(body.count)], body: body)
    }

    /// Binds and serves; returns the bound port.
    @discardableResult
    public func start() throws -> Int {
        let port = try server.start()
        refresher.start()
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
        await stop()
    }

    /// Stops serving (gracefully, as on SIGTERM) and releases the App Store client and simulator.
    public func stop() async {
        server.shutdown()
        await server.waitUntilStopped()
        await refresher.stop()
        transport.shutdown()
        if let simulator {
            simulator.shutdown()
            await simulator.waitUntilStopped()
        }
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
