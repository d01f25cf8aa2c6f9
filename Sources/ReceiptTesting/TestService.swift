import AppStore
package import AppStoreSimulator
package import Clocks
package import DatabaseEngine
import Foundation
package import GooglePlaySimulator
package import HTTPServer
package import Logging
package import ReceiptCore
package import ReceiptService
package import Resilience
import Storage

/// The repository's migrations.
package let migrationsDirectory =
    URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().path + "/Migrations"

/// The repository's configuration folder.
package let configDirectory =
    URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().path + "/Config"

extension ServiceConfiguration.AppStoreSettings {
    /// The App Store simulator, one app, two retries: for tests (``TestApp`` starts it). Its
    /// timeouts are the hang guard: a simulator's handler waits its turn on Swift concurrency's
    /// two threads behind every suite the run started at once, and on a loaded machine that took
    /// over a minute. A test about a timeout sets its own.
    package static let simulated = ServiceConfiguration.AppStoreSettings(
        productionURL: "http://127.0.0.1:1/unused", sandboxURL: "http://127.0.0.1:1/unused", simulator: true, allowHTTP: true,
        bundleIDs: ["com.example.app"], sharedSecret: TestSecrets.sharedSecret, connectTimeout: .seconds(10),
        maxResponseBytes: 1 << 20, maxRetries: 2, attemptTimeout: hangGuard, deadline: hangGuard * 2)
}

/// The test service's configuration: the simulator, a database at `path`, test keys
/// (``TestSecrets``: `pk` public, `sk` secret).
package func testConfiguration(
    path: String, policy: String = "transfer", bundleIDs: [String] = ["com.example.app"],
    entitlements: [String: [String]] = ["premium": ["monthly", "yearly", "premium_monthly", "lifetime"]],
    signedData: ServiceConfiguration.SignedDataSettings = .init(), breaker: CircuitBreaker.Policy = .init(),
    limits: RateLimiter.Settings = .init(), refresher: Refresher.Settings = .init(), googlePlay: Bool = false
) -> ServiceConfiguration {
    var appStore = ServiceConfiguration.AppStoreSettings.simulated
    appStore.bundleIDs = bundleIDs
    appStore.signedData = signedData
    appStore.breaker = breaker
    var configuration = ServiceConfiguration(
        environment: "test", http: HTTPServerConfiguration(host: "127.0.0.1", port: 0, eventLoops: 1, accessLog: false),
        database: .init(path: path, busyTimeout: .seconds(10), migrationsDirectory: migrationsDirectory), logLevel: .critical,
        appStore: appStore,
        api: .init(publicKeys: [TestSecrets.publicKey], secretKeys: [TestSecrets.secretKey], ownershipPolicy: policy),
        entitlements: entitlements)
    configuration.limits = limits
    configuration.refresher = refresher
    if googlePlay {
        // The Google Play simulator for one app (TestApp starts it with the test process's key).
        configuration.googlePlay.packages = ["com.example.app"]
        configuration.googlePlay.simulator = true
        configuration.googlePlay.timeout = hangGuard
    }
    return configuration
}

/// An opened ``Application`` with the App Store simulator its configuration asks for, wired as
/// the executable wires it. Reads through to the application (`app.database`, `app.refresher`).
@dynamicMemberLookup
package final class TestApp: Sendable {
    package let application: Application
    package let simulator: HTTPServer?
    /// The simulator itself (its purchases, notifications and Server API), when one runs.
    package let appStore: AppStoreSimulator?
    /// The Google Play simulator, when `googlePlay.simulator` is on.
    package let googlePlayServed: GooglePlaySimulator.Served?
    package var googlePlay: GooglePlaySimulator? { googlePlayServed?.simulator }
    /// How it was opened, for ``restarted(logger:monotonic:)``.
    private let wired: ServiceConfiguration
    private let wall: WallClock
    private let stores: [any PurchaseStore]

    private init(
        application: Application, simulator: HTTPServer?, appStore: AppStoreSimulator?,
        googlePlay: GooglePlaySimulator.Served?, wired: ServiceConfiguration, wall: WallClock, stores: [any PurchaseStore]
    ) {
        self.application = application
        self.simulator = simulator
        self.appStore = appStore
        self.googlePlayServed = googlePlay
        self.wired = wired
        self.wall = wall
        self.stores = stores
    }

    /// receiptd stopped and opened again on the same database, while the simulated Apple (its
    /// purchases and notification history) keeps running: a restart.
    package func restarted(logger: Logger = quietLogger, monotonic: any MonotonicClock = SystemMonotonicClock()) async throws
        -> TestApp
    {
        await application.stop()
        let (wired, wall, stores) = (wired, wall, stores)
        let application = try await onItsOwnThread {
            try Application.open(configuration: wired, logger: logger, clock: wall, monotonic: monotonic, stores: stores)
        }
        return TestApp(
            application: application, simulator: simulator, appStore: appStore, googlePlay: googlePlayServed, wired: wired,
            wall: wall, stores: stores)
    }

    /// Starts the simulator (on `clock`) when configured, then opens the application (migrating).
    /// `monotonic` (say a ``ManualMonotonicClock``) makes Apple's retry delays instant. On a thread
    /// of its own: migrating blocks for a while, and a suite of services opening at once on Swift
    /// concurrency's two threads kept the simulators' handlers from answering for a minute.
    /// `stores` are plugged in beside Apple's and Google's (``PurchaseStore``).
    package static func open(
        _ configuration: ServiceConfiguration, logger: Logger = quietLogger, clock: TestClock? = nil,
        monotonic: any MonotonicClock = SystemMonotonicClock(), stores: [any PurchaseStore] = []
    ) async throws -> TestApp {
        try await onItsOwnThread {
            try openBlocking(configuration, logger: logger, clock: clock, monotonic: monotonic, stores: stores)
        }
    }

    private static func openBlocking(
        _ configuration: ServiceConfiguration, logger: Logger, clock: TestClock?, monotonic: any MonotonicClock,
        stores: [any PurchaseStore]
    ) throws -> TestApp {
        var configuration = configuration
        let wall = clock?.wall ?? .system
        var simulator: AppStoreSimulator.Served?
        if configuration.appStore.simulator {
            let settings = configuration.appStore
            // As the executable wires it (SimulatorWiring), but the roots stay the test's own.
            let credentials = settings.serverAPI.credentials ?? TestSecrets.serverAPICredentials
            configuration.appStore.serverAPI.credentials = credentials
            let apps = settings.simulatedApps
            var simulated = AppStoreSimulator.Configuration(
                bundleID: apps.main, sharedSecret: settings.sharedSecret, serverAPIKey: .init(credentials))
            simulated.otherApps = apps.others.map {
                .init(bundleID: $0.bundleID, sharedSecret: $0.sharedSecret, serverAPIKey: $0.credentials.map { .init($0) })
            }
            let served = try AppStoreSimulator.serve(configuration: simulated, now: wall, logger: logger)
            (configuration.appStore.productionURL, configuration.appStore.sandboxURL) = (served.productionURL, served.sandboxURL)
            (configuration.appStore.serverAPI.productionURL, configuration.appStore.serverAPI.sandboxURL) = (
                served.serverAPIProductionURL, served.serverAPISandboxURL
            )
            simulator = served
        }
        var google: GooglePlaySimulator.Served?
        if configuration.googlePlay.simulator {
            // As the executable wires it (SimulatorWiring), with the test process's key.
            let (served, account) = try GooglePlaySimulator.serve(
                packages: configuration.googlePlay.packages, key: TestSecrets.googlePlayKey, pushKey: TestSecrets.googlePushKey,
                clock: wall, logger: logger)
            configuration.googlePlay.useSimulator(
                apiBase: served.apiBase, account: account, pushAudience: GooglePlaySimulator.pushAudience,
                pushAccount: GooglePlaySimulator.pushAccount)
            google = served
        }
        do {
            return TestApp(
                application: try Application.open(
                    configuration: configuration, logger: logger, clock: wall, monotonic: monotonic, stores: stores),
                simulator: simulator?.server, appStore: simulator?.simulator, googlePlay: google, wired: configuration,
                wall: wall, stores: stores)
        } catch {
            simulator?.server.shutdown()
            google?.server.shutdown()
            throw error
        }
    }

    package subscript<T>(dynamicMember keyPath: KeyPath<Application, T>) -> T { application[keyPath: keyPath] }

    /// Binds the HTTP server; returns its port.
    @discardableResult
    package func start() throws -> Int { try application.start() }

    package func stop() async {
        await application.stop()
        if let simulator {
            simulator.shutdown()
            await simulator.waitUntilStopped()
        }
        await googlePlayServed?.stop()
    }
}

/// A scratch folder, removed after `body`.
package func withScratchDirectory<T>(_ prefix: String, _ body: (String) async throws -> T) async throws -> T {
    let dir = NSTemporaryDirectory() + prefix + "-" + UUID().uuidString
    try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: dir) }
    return try await body(dir)
}

/// receiptd with the simulator, a scratch database and test keys; `body` gets the port and where
/// the database is (``TestDatabase``). Fails the test if a secret leaked meanwhile.
package func withService(
    policy: String = "transfer", bundleIDs: [String] = ["com.example.app"],
    entitlements: [String: [String]] = ["premium": ["monthly", "yearly", "premium_monthly", "lifetime"]],
    signedData: ServiceConfiguration.SignedDataSettings = .init(), breaker: CircuitBreaker.Policy = .init(),
    limits: RateLimiter.Settings = .init(), monotonic: any MonotonicClock = SystemMonotonicClock(), googlePlay: Bool = false,
    _ body: (Int, String) async throws -> Void
) async throws {
    try await withScratchDirectory("receiptd-api") { dir in
        var configuration = testConfiguration(
            path: dir + "/db.sqlite", policy: policy, bundleIDs: bundleIDs, entitlements: entitlements,
            signedData: signedData, breaker: breaker, limits: limits, googlePlay: googlePlay)
        let database = try await TestDatabase.place(&configuration, path: dir + "/db.sqlite")
        let app = try await TestApp.open(configuration, monotonic: monotonic)
        let port = try app.start()
        try await body(port, database)
        await app.stop()
        await TestDatabase.release(database)
        expectNoSecretLeaked()
    }
}

/// receiptd on test clocks (wall: `TestClock`, moved by the test; monotonic: a
/// ``ManualMonotonicClock``, so Apple's retry delays cost nothing), with the application itself
/// (for its cache, refresher, use cases).
package func withClockedService(
    configuration: (String) -> ServiceConfiguration = { testConfiguration(path: $0) }, clock: TestClock = TestClock(),
    stores: [any PurchaseStore] = [], _ body: (TestApp, Int, String, TestClock) async throws -> Void
) async throws {
    try await withScratchDirectory("receiptd-clocked") { dir in
        var configured = configuration(dir + "/db.sqlite")
        let database = try await TestDatabase.place(&configured, path: dir + "/db.sqlite")
        let app = try await TestApp.open(configured, clock: clock, monotonic: ManualMonotonicClock(), stores: stores)
        let port = try app.start()
        try await body(app, port, database, clock)
        await app.stop()
        await TestDatabase.release(database)
        expectNoSecretLeaked()
    }
}

/// Every row of every table the API writes, as text: a refused request or a duplicate must leave
/// it unchanged.
package func tableSnapshot(_ path: String) throws -> [String] {
    try tableSnapshot(TestDatabase.open(path))
}

/// ``tableSnapshot(_:)-(String)`` of an open database.
package func tableSnapshot(_ db: Database) throws -> [String] {
    var rows: [String] = []
    for table in [
        "subscribers", "transactions", "pending_renewal_info", "renewal_history", "latest_receipts", "ownership",
        "ownership_transfers", "events", "notifications",
    ] {
        let s = try db.prepare("SELECT * FROM \(table) ORDER BY 1")
        while try s.step() { rows.append(table + ":" + (0..<24).map { s.text($0) ?? "∅" }.joined(separator: "|")) }
    }
    return rows
}

/// An application opened (migrated) on a scratch database and a test clock, its HTTP server never
/// started: the use cases called directly, as the CLI calls them. Checks that no secret leaked.
package func withOpenedApp(
    policy: String = "transfer", readers: Int = 2, _ body: (TestApp, TestClock) async throws -> Void
) async throws {
    try await withScratchDirectory("receiptd-core") { dir in
        let clock = TestClock()
        var configuration = testConfiguration(path: dir + "/db.sqlite", policy: policy)
        configuration.database.readers = readers
        let app = try await TestApp.open(configuration, clock: clock)
        try await body(app, clock)
        await app.stop()
        expectNoSecretLeaked()
    }
}
