import AppStore
import AppStoreServerAPI
import CoreMetrics
import Entitlements
import FoundationEssentials
import Glibc
import HTTPServer
import JSON
import Logging
import ReceiptCore
import SignedData
import Storage
import X509

/// The whole effective configuration of receiptd, validated. See Docs/configuration.md for every
/// key; each is documented beside its read below too.
public struct ServiceConfiguration: Sendable {
    /// `development`, `production` or `test`; chooses `Config/<environment>.json`.
    public var environment: String
    /// The HTTP server: bind address, limits, timeouts.
    public var http: HTTPServerConfiguration
    /// SQLite: file path, busy timeout, where the migrations are.
    public var database: Database
    /// Log level.
    public var logLevel: Logger.Level
    /// `json` (one object per line) or `text` (swift-log's human-readable lines); by default text
    /// in `development`, JSON elsewhere.
    public var logFormat = "json"
    /// The OpenAPI document served at GET /openapi.yaml (`openapi.yaml` beside `Config/`).
    public var openAPIFile = "openapi.yaml"
    /// Apple's verifyReceipt: URLs, the app(s), the shared secret, timeouts, retries.
    public var appStore: AppStoreSettings
    /// API keys by role and the ownership policy.
    public var api: APISettings
    /// Entitlement name → product ids, from `entitlements.file`.
    public var entitlements: [String: [String]]
    /// What kind each product is, from `products.file`.
    public var catalog = Catalog()
    /// Limits on POST /v1/receipts (`limits.*`); off unless configured (the loader's defaults are on).
    package var limits = RateLimiter.Settings()
    /// The background refresher (`refresher.*`); off unless configured (the loader's default is on).
    package var refresher = Refresher.Settings()
    /// The derivation's policy knobs (`entitlements.billingRetryEntitles`, `entitlements.familySharedCounts`).
    public var policy = DerivationPolicy()
    /// Outbound webhooks (`webhooks.*`); none configured: off.
    package var webhooks = WebhookSettings()

    package init(
        environment: String, http: HTTPServerConfiguration, database: Database, logLevel: Logger.Level,
        appStore: AppStoreSettings, api: APISettings, entitlements: [String: [String]], catalog: Catalog = Catalog(),
        policy: DerivationPolicy = DerivationPolicy()
    ) {
        self.catalog = catalog
        self.policy = policy
        self.environment = environment
        self.http = http
        self.database = database
        self.logLevel = logLevel
        self.appStore = appStore
        self.api = api
        self.entitlements = entitlements
    }

    /// Rules, product kinds and policy together, as the derivation takes them.
    package var entitlementSettings: EntitlementSettings {
        EntitlementSettings(rules: EntitlementRules(entitlements), catalog: catalog, policy: policy)
    }

    /// How receiptd reaches Apple.
    public struct AppStoreSettings: Sendable {
        public var productionURL: String
        public var sandboxURL: String
        /// Run the built-in App Store simulator in-process and send every verification to it.
        public var simulator: Bool
        /// Plain-http URLs allowed (the simulator, tests).
        public var allowHTTP: Bool
        /// The apps whose receipts are accepted; a receipt for another bundle id is refused.
        public var bundleIDs: [String]
        /// The shared secret sent as `password`; from the environment only.
        public var sharedSecret: String?
        public var connectTimeout: Duration
        public var maxResponseBytes: Int
        public var maxRetries: Int
        public var attemptTimeout: Duration
        public var deadline: Duration
        /// How Apple's signed data (V2 notifications, StoreKit 2 transactions) is verified.
        public var signedData = SignedDataSettings()
        /// When to stop calling Apple during an outage, and for how long.
        public var breaker = CircuitBreaker.Policy()
        /// Verifications talking to Apple at once; more wait their turn. Throughput is this over
        /// Apple's latency: 1,000 in flight at 300 ms is 3,300 verifications a second.
        public var maxConcurrentCalls = 1_000
        /// `appStore.verifier`: who answers for a posted app receipt.
        package var verifier: VerifyPurchase.Verifier = .verifyReceipt
        /// The App Store Server API (`appStore.serverApi.*`).
        public var serverAPI = ServerAPISettings()
        /// Catching up on missed notifications (`appStore.notificationHistory.*`).
        package var notificationHistory = NotificationCatchUp.Settings()
        /// Answering `CONSUMPTION_REQUEST` (`appStore.consumption.*`).
        package var consumption = AnswerConsumptionRequest.Settings()

        package init(
            productionURL: String, sandboxURL: String, simulator: Bool, allowHTTP: Bool, bundleIDs: [String],
            sharedSecret: String?, connectTimeout: Duration, maxResponseBytes: Int, maxRetries: Int, attemptTimeout: Duration,
            deadline: Duration, signedData: SignedDataSettings = SignedDataSettings(),
            breaker: CircuitBreaker.Policy = CircuitBreaker.Policy(), maxConcurrentCalls: Int = 1_000
        ) {
            self.productionURL = productionURL
            self.sandboxURL = sandboxURL
            self.simulator = simulator
            self.allowHTTP = allowHTTP
            self.bundleIDs = bundleIDs
            self.sharedSecret = sharedSecret
            self.connectTimeout = connectTimeout
            self.maxResponseBytes = maxResponseBytes
            self.maxRetries = maxRetries
            self.attemptTimeout = attemptTimeout
            self.deadline = deadline
            self.signedData = signedData
            self.breaker = breaker
            self.maxConcurrentCalls = maxConcurrentCalls
        }
    }

    /// How receiptd reaches the App Store Server API (Docs/apple-protocols.md §4).
    public struct ServerAPISettings: Sendable {
        /// Defaults: the hosts Apple's libraries use since 2026-05 (§4.2).
        public var productionURL = "https://api.storekit.apple.com"
        public var sandboxURL = "https://api.storekit-sandbox.apple.com"
        /// The In-App Purchase key with its key id and issuer id; nil when none is configured (the
        /// Server API is then never called, and a posted `transaction_id` is refused as misconfigured).
        public var credentials: ServerAPIToken.Credentials?

        public init(
            productionURL: String = "https://api.storekit.apple.com",
            sandboxURL: String = "https://api.storekit-sandbox.apple.com",
            credentials: ServerAPIToken.Credentials? = nil
        ) {
            self.productionURL = productionURL
            self.sandboxURL = sandboxURL
            self.credentials = credentials
        }
    }

    /// Trust anchors and expected claims for Apple's JWS (Docs/apple-protocols.md §3.7).
    public struct SignedDataSettings: Sendable {
        /// `appStore.rootCertificates`: Apple Root CA - G3 (built in) by default.
        public var roots: [Certificate] = [AppleRootCA.g3]
        /// `appStore.appAppleIds`: the apps' App Store ids; production notifications must name one.
        public var appAppleIDs: [Int64] = []
        /// `appStore.environments`: which environments' signed data is accepted.
        public var environments: Set<AppStoreEnvironment> = [.production, .sandbox]
        /// `appStore.signedDataValidationTime`: `signedDate` (default) or `now`.
        public var validationTime: SignedDataVerifier.ValidationTime = .signedDate

        public init(
            roots: [Certificate] = [AppleRootCA.g3], appAppleIDs: [Int64] = [],
            environments: Set<AppStoreEnvironment> = [.production, .sandbox],
            validationTime: SignedDataVerifier.ValidationTime = .signedDate
        ) {
            self.roots = roots
            self.appAppleIDs = appAppleIDs
            self.environments = environments
            self.validationTime = validationTime
        }
    }

    /// Who may call the API.
    public struct APISettings: Sendable {
        /// Keys that may only POST receipts (safe inside an app).
        public var publicKeys: [String]
        /// Keys that may do everything.
        public var secretKeys: [String]
        public var ownershipPolicy: String
        /// Whether GET /metrics asks for a secret key (Prometheus sends it as a bearer token).
        public var metricsRequireKey = true

        package init(publicKeys: [String], secretKeys: [String], ownershipPolicy: String, metricsRequireKey: Bool = true) {
            self.publicKeys = publicKeys
            self.secretKeys = secretKeys
            self.ownershipPolicy = ownershipPolicy
            self.metricsRequireKey = metricsRequireKey
        }
    }

    /// Where the data lives: SQLite (the default, one process) or PostgreSQL (several instances).
    public struct Database: Sendable {
        /// SQLite file; its folder is created if missing. `:memory:` for a throwaway database.
        public var path: String
        /// How long a statement waits for a lock before failing (SQLite).
        public var busyTimeout: Duration
        /// Folder of the numbered `.sql` migration files (PostgreSQL's in its `postgresql/` folder).
        public var migrationsDirectory: String
        /// How many subscriber documents GET keeps rendered in memory (0: none). See `SubscriberCache`.
        public var documentCache: Int = 10_000
        /// How many connections serve reads beside the writer (SQLite: read-only) or the writing
        /// connections (PostgreSQL), each on a thread of its own (0: reads queue with the saves).
        /// See `DatabaseQueue`.
        public var readers: Int = 2
        /// `database.url`, a secret (it may hold a password): `postgresql://…` (libpq's syntax)
        /// selects PostgreSQL; `sqlite:PATH` SQLite at PATH; unset, SQLite at ``path``.
        public var url: String?
        /// How many connections each instance opens to PostgreSQL for saves (``readers`` more serve reads).
        public var connections: Int = 4

        package init(
            path: String, busyTimeout: Duration, migrationsDirectory: String, documentCache: Int = 10_000, readers: Int = 2,
            url: String? = nil, connections: Int = 4
        ) {
            self.path = path
            self.busyTimeout = busyTimeout
            self.migrationsDirectory = migrationsDirectory
            self.documentCache = documentCache
            self.readers = readers
            self.url = url
            self.connections = connections
        }

        /// The database ``url`` (or ``path``) names.
        public enum Location: Sendable, Equatable {
            case sqlite(path: String)
            case postgresql(url: String)

            /// `postgresql://…` (or `postgres://…`), or `sqlite:PATH`; nil for anything else.
            public init?(url: String) {
                if url.hasPrefix("postgresql://") || url.hasPrefix("postgres://") {
                    self = .postgresql(url: url)
                } else if url.hasPrefix("sqlite:"), url.count > "sqlite:".count {
                    self = .sqlite(path: String(url.dropFirst("sqlite:".count)))
                } else {
                    return nil
                }
            }

            /// One connection to it.
            public func connect(busyTimeout: Duration = .seconds(5)) throws -> Storage.Database {
                switch self {
                case .sqlite(let path): try Storage.Database(path: path, busyTimeout: busyTimeout)
                case .postgresql(let url): try Storage.Database(postgresURL: url)
                }
            }
        }

        /// Where ``url`` points, else ``path``; nil when ``url`` is neither form.
        public var location: Location? { url.map(Location.init(url:)) ?? .sqlite(path: path) }

        /// What logs may say of the database: the SQLite path, or `postgresql` (never the URL).
        public var name: String {
            switch location {
            case .sqlite(let path)?: path
            case .postgresql?: "postgresql"
            case nil: "invalid"
            }
        }

        /// The migrations of the configured database's dialect.
        public func migrations() throws -> [Migration] {
            try migrations(for: location.map { if case .postgresql = $0 { .postgresql } else { .sqlite } } ?? .sqlite)
        }

        /// The migrations of `dialect`, under ``migrationsDirectory``.
        public func migrations(for dialect: Storage.Database.Dialect) throws -> [Migration] {
            try Migration.load(from: Migration.directory(for: dialect, under: migrationsDirectory))
        }

        /// Opens the configured database for the service: SQLite's writer and readers, or pools of
        /// PostgreSQL connections for saves and for reads.
        public func openQueue(metrics: any MetricsFactory) throws -> DatabaseQueue {
            switch location {
            case .sqlite(let path)?:
                try DatabaseQueue(path: path, busyTimeout: busyTimeout, metrics: metrics, readers: readers)
            case .postgresql(let url)?:
                try DatabaseQueue(postgresURL: url, connections: connections, readers: readers, metrics: metrics)
            case nil:
                throw ConfigurationError(key: "database.url", message: Self.urlForms)
            }
        }

        /// Opens one connection to the configured database, for the command-line tools.
        public func openConnection() throws -> Storage.Database {
            guard let location else { throw ConfigurationError(key: "database.url", message: Self.urlForms) }
            return try location.connect(busyTimeout: busyTimeout)
        }

        static let urlForms = "must be postgresql://… or sqlite:PATH"
    }

    /// The environments with a meaning.
    public static let environments = ["development", "production", "test"]

    /// Loads and validates the configuration.
    /// - Parameters:
    ///   - configDirectory: the folder with `default.json` and `<environment>.json`.
    ///   - environment: the process environment (injected for tests).
    /// - Returns: the configuration and the loader, whose ``ConfigLoader/entries`` list every
    ///   effective value with secrets redacted.
    public static func load(
        configDirectory: String, environment: [String: String] = ProcessInfo.processInfo.environment
    ) async throws -> (ServiceConfiguration, ConfigLoader) {
        let name = environment[ConfigLoader.environmentName(for: "environment")] ?? "development"
        guard environments.contains(name) else {
            throw ConfigurationError(
                key: "environment", message: "must be one of \(environments.joined(separator: ", ")), got \"\(name)\"")
        }
        let c = try await ConfigLoader(configDirectory: configDirectory, environmentName: name, environment: environment)
        _ = try c.choice("environment", default: name, allowed: environments)

        let limits = HTTPParserLimits(
            // Longest request line before 414.
            maxRequestLineBytes: try c.int("http.maxRequestLineBytes", default: 8192, range: 64...1_048_576),
            // Largest header section before 431.
            maxHeaderBytes: try c.int("http.maxHeaderBytes", default: 16_384, range: 256...1_048_576),
            // Most header fields before 431.
            maxHeaderCount: try c.int("http.maxHeaderCount", default: 100, range: 1...10_000),
            // Largest request body before 413.
            maxBodyBytes: try c.int("http.maxBodyBytes", default: 1_048_576, range: 0...1_073_741_824))
        let http = HTTPServerConfiguration(
            // Address to bind: an IPv4 or IPv6 literal.
            host: try c.string("http.host", default: "127.0.0.1"),
            // Port to bind; 0 picks a free one.
            port: try c.int("http.port", default: 8080, range: 0...65_535),
            // Event-loop threads; 0 means one per core.
            eventLoops: try c.int("http.eventLoops", default: 0, range: 0...256).nonZero ?? HTTPServerConfiguration.coreCount,
            limits: limits,
            // Connections at once; past it new ones get 503 and are closed.
            maxConnections: try c.int("http.maxConnections", default: 16_384, range: 1...1_000_000),
            // Time from a request's first byte to the end of its head (slowloris guard).
            headerTimeout: try c.milliseconds("http.headerTimeoutMs", default: 10_000),
            // Time from the end of the head to the end of the body.
            bodyTimeout: try c.milliseconds("http.bodyTimeoutMs", default: 30_000),
            // Time a keep-alive connection may idle between requests.
            idleTimeout: try c.milliseconds("http.idleTimeoutMs", default: 75_000),
            // Time a response may take to reach a slow reader.
            writeTimeout: try c.milliseconds("http.writeTimeoutMs", default: 30_000),
            // On SIGTERM, how long in-flight requests may still run.
            shutdownGracePeriod: try c.milliseconds("http.shutdownGraceMs", default: 10_000),
            // One log line per request.
            accessLog: try c.bool("http.accessLog", default: true))
        guard isIPLiteral(http.host) else {
            throw ConfigurationError(key: "http.host", message: "must be an IPv4 or IPv6 address literal, got \"\(http.host)\"")
        }
        let database = Database(
            path: try c.string("database.path", default: "data/receiptd.sqlite"),
            busyTimeout: try c.milliseconds("database.busyTimeoutMs", default: 5000),
            migrationsDirectory: try c.string("database.migrationsDirectory", default: "Migrations"),
            documentCache: try c.int("database.documentCache", default: 10_000, range: 0...10_000_000),
            readers: try c.int("database.readers", default: 2, range: 0...64),
            // PostgreSQL (postgresql://…) or SQLite (sqlite:PATH): RECEIPTD_DATABASE_URL or …_FILE.
            url: try c.secret("database.url"),
            connections: try c.int("database.connections", default: 4, range: 1...256))
        guard !database.path.isEmpty else { throw ConfigurationError(key: "database.path", message: "must not be empty") }
        guard database.location != nil else { throw ConfigurationError(key: "database.url", message: Database.urlForms) }
        let level = try c.choice(
            "log.level", default: "info", allowed: Logger.Level.allCases.map(\.rawValue))

        var appStore = AppStoreSettings(
            // Apple's production and sandbox verifyReceipt URLs (Docs/apple-protocols.md §1.1).
            productionURL: try c.string("appStore.productionUrl", default: "https://buy.itunes.apple.com/verifyReceipt"),
            sandboxURL: try c.string("appStore.sandboxUrl", default: "https://sandbox.itunes.apple.com/verifyReceipt"),
            // Serve verifications from the built-in simulator (offline development).
            simulator: try c.bool("appStore.simulator", default: false),
            // Allow http:// URLs (loopback simulators only).
            allowHTTP: try c.bool("appStore.allowHttp", default: false),
            // Bundle ids of the apps whose receipts are accepted.
            bundleIDs: try c.strings("appStore.bundleIds", default: ["com.example.app"]),
            // The app's shared secret (RECEIPTD_APP_STORE_SHARED_SECRET or …_FILE).
            sharedSecret: try c.secret("appStore.sharedSecret"),
            connectTimeout: try c.milliseconds("appStore.connectTimeoutMs", default: 5000),
            maxResponseBytes: try c.int("appStore.maxResponseBytes", default: 4 << 20, range: 4096...(64 << 20)),
            maxRetries: try c.int("appStore.maxRetries", default: 3, range: 0...10),
            attemptTimeout: try c.milliseconds("appStore.attemptTimeoutMs", default: 10_000),
            deadline: try c.milliseconds("appStore.deadlineMs", default: 20_000))
        appStore.signedData = try loadSignedDataSettings(c)
        appStore.breaker = CircuitBreaker.Policy(
            // Verifications in a row that end `app_store_unavailable` before receiptd stops calling Apple.
            failureThreshold: try c.int("appStore.breakerFailureThreshold", default: 5, range: 1...1000),
            // How long the first pause lasts; each failed probe doubles it, up to the maximum.
            openFor: try c.milliseconds("appStore.breakerOpenMs", default: 30_000),
            maxOpenFor: try c.milliseconds("appStore.breakerMaxOpenMs", default: 300_000))
        // Verifications talking to Apple at once (the same receipt asked twice at once is one call).
        appStore.maxConcurrentCalls = try c.int("appStore.maxConcurrentCalls", default: 1_000, range: 1...10_000)
        appStore.verifier =
            VerifyPurchase.Verifier(
                rawValue: try c.choice(
                    "appStore.verifier", default: "verify_receipt", allowed: VerifyPurchase.Verifier.allCases.map(\.rawValue)))
            ?? .verifyReceipt
        appStore.serverAPI = try loadServerAPISettings(c, simulator: appStore.simulator, verifier: appStore.verifier)
        appStore.notificationHistory = NotificationCatchUp.Settings(
            // Get Notification History at start and every intervalMs (with a Server API key).
            enabled: try c.bool("appStore.notificationHistory.enabled", default: true),
            intervalMs: Int64(try c.int("appStore.notificationHistory.intervalMs", default: 3_600_000, range: 1000...86_400_000)),
            // Each catch-up starts this long before the newest stored notification.
            overlapMs: Int64(try c.int("appStore.notificationHistory.overlapMs", default: 3_600_000, range: 0...86_400_000)),
            // With no notification stored yet, the first catch-up looks back this many days (Apple keeps 180).
            lookbackMs: Int64(try c.int("appStore.notificationHistory.lookbackDays", default: 7, range: 1...180)) * 86_400_000)
        // DECLINE, GRANT_FULL, GRANT_PRORATED, or none (no preference sent).
        let refundPreference = try c.choice(
            "appStore.consumption.refundPreference", default: "none",
            allowed: ["none"] + AnswerConsumptionRequest.Settings.refundPreferences)
        appStore.consumption = AnswerConsumptionRequest.Settings(
            // Answer CONSUMPTION_REQUEST with Send Consumption Information: only if customers consented.
            enabled: try c.bool("appStore.consumption.enabled", default: false),
            // Whether the app offers a free sample or trial, or describes the content, before purchase.
            sampleContentProvided: try c.bool("appStore.consumption.sampleContentProvided", default: false),
            refundPreference: refundPreference == "none" ? nil : refundPreference)
        if appStore.consumption.enabled && appStore.serverAPI.credentials == nil && !appStore.simulator {
            throw ConfigurationError(
                key: "appStore.consumption.enabled",
                message: "answering consumption requests needs the App Store Server API (appStore.serverApi.keyId, issuerId, key)"
            )
        }
        guard !appStore.bundleIDs.isEmpty else {
            throw ConfigurationError(key: "appStore.bundleIds", message: "must name at least one app")
        }
        for (key, url) in [
            ("appStore.productionUrl", appStore.productionURL), ("appStore.sandboxUrl", appStore.sandboxURL),
            ("appStore.serverApi.productionUrl", appStore.serverAPI.productionURL),
            ("appStore.serverApi.sandboxUrl", appStore.serverAPI.sandboxURL),
        ] {
            guard url.hasPrefix("https://") || (appStore.allowHTTP && url.hasPrefix("http://")) else {
                throw ConfigurationError(key: key, message: "must be an https:// URL (http:// only with appStore.allowHttp)")
            }
        }
        let api = APISettings(
            // API keys, comma-separated, from the environment or a secret file only.
            publicKeys: try c.secretList("api.publicKeys"),
            secretKeys: try c.secretList("api.secretKeys"),
            // `transfer`: the newest poster of a receipt gets it; `transfer_if_inactive`: only when it
            // entitles its holder to nothing now; `keep`: the first keeps it (409).
            ownershipPolicy: try c.choice(
                "ownership.policy", default: "transfer", allowed: OwnershipPolicy.allCases.map(\.rawValue)),
            // GET /metrics with a secret key only (false: open, for a port only Prometheus reaches).
            metricsRequireKey: try c.bool("metrics.requireKey", default: true))
        if name == "production" && api.secretKeys.isEmpty {
            throw ConfigurationError(key: "api.secretKeys", message: "must be set in production")
        }
        // Entitlement name → product ids, a JSON object in its own file.
        let entitlementsFile = try c.string("entitlements.file", default: configDirectory + "/entitlements.json")
        let entitlements = try loadEntitlements(entitlementsFile)
        // Product id → kind, a JSON object in its own file (undeclared products: by their expiry).
        let catalog = try loadCatalog(try c.string("products.file", default: configDirectory + "/products.json"))
        for (name, products) in entitlements {
            for product in products where catalog.products[product] == .consumable {
                throw ConfigurationError(
                    key: "entitlements.file",
                    message: "entitlement \"\(name)\" lists \"\(product)\", a consumable: consumables never entitle")
            }
        }
        let policy = DerivationPolicy(
            // Whether a subscription in billing retry (no grace period) still entitles; Apple says no.
            billingRetryEntitles: try c.bool("entitlements.billingRetryEntitles", default: false),
            // Whether purchases shared through Family Sharing entitle family members.
            familySharedCounts: try c.bool("entitlements.familySharedCounts", default: true))
        let receiptLimits = RateLimiter.Settings(
            // POST /v1/receipts per API key (one app's whole fleet shares a public key) and its burst; 0: off.
            perKey: Double(try c.int("limits.receiptsPerKeyPerSecond", default: 200, range: 0...1_000_000)),
            keyBurst: Double(try c.int("limits.receiptsKeyBurst", default: 400, range: 1...1_000_000)),
            // POST /v1/receipts per client address (a device, or a NAT of many) and its burst; 0: off.
            perAddress: Double(try c.int("limits.receiptsPerAddressPerSecond", default: 20, range: 0...1_000_000)),
            addressBurst: Double(try c.int("limits.receiptsAddressBurst", default: 40, range: 1...1_000_000)))
        var refresher = Refresher.Settings(
            // Re-validate stored receipts of subscriptions that expired or are in billing retry or grace.
            enabled: try c.bool("refresher.enabled", default: true),
            // Time between scans for due subscriptions.
            intervalMs: Int64(try c.int("refresher.intervalMs", default: 60_000, range: 100...86_400_000)),
            // Most subscriptions refreshed per scan.
            batchSize: try c.int("refresher.batchSize", default: 100, range: 1...10_000),
            // Most refresher calls to Apple per second.
            maxPerSecond: Double(try c.int("refresher.maxPerSecond", default: 5, range: 1...1000)),
            // How long one refresher's claim on a subscription lasts (a killed process's claim runs out).
            leaseMs: Int64(try c.int("refresher.leaseMs", default: 600_000, range: 1000...86_400_000)))
        refresher.policy = RefreshPolicy(
            // Spread of the first check after an expiry.
            jitterMs: Int64(try c.int("refresher.jitterMs", default: 900_000, range: 0...86_400_000)),
            // How often a subscription in billing retry or grace is asked about again.
            billingRetryRecheckMs: Int64(
                try c.int("refresher.billingRetryRecheckMs", default: 21_600_000, range: 60_000...2_592_000_000)),
            // Expiries older than this many days are not chased.
            lookbackMs: Int64(try c.int("refresher.lookbackDays", default: 60, range: 1...3650)) * 86_400_000,
            // After Apple failed to answer: first wait, doubled per failure up to the maximum.
            backoffMs: Int64(try c.int("refresher.backoffMs", default: 60_000, range: 1000...86_400_000)),
            maxBackoffMs: Int64(try c.int("refresher.maxBackoffMs", default: 3_600_000, range: 1000...604_800_000)))
        var configuration = ServiceConfiguration(
            environment: name, http: http, database: database, logLevel: Logger.Level(rawValue: level)!,
            appStore: appStore, api: api, entitlements: entitlements, catalog: catalog, policy: policy)
        configuration.limits = receiptLimits
        configuration.refresher = refresher
        configuration.webhooks = try loadWebhookSettings(c, bundleIDs: appStore.bundleIDs)
        configuration.openAPIFile = try c.string("api.openapiFile", default: "openapi.yaml")
        configuration.logFormat = try c.choice(
            "log.format", default: name == "development" ? "text" : "json", allowed: ["json", "text"])
        return (configuration, c)
    }

    /// `webhooks.*`: the endpoints named by `webhooks.endpoints`, each from `webhooks.<name>.*` with
    /// its secret(s) from `RECEIPTD_WEBHOOKS_<NAME>_SECRET` (or `…_FILE`), and how they are delivered.
    static func loadWebhookSettings(_ c: ConfigLoader, bundleIDs: [String]) throws(ConfigurationError) -> WebhookSettings {
        var settings = WebhookSettings()
        // Names of the endpoints (lower-case letters and digits); each is configured under webhooks.<name>.
        let names = try c.strings("webhooks.endpoints", default: [])
        // Plain-http endpoint URLs (a receiver on loopback in development and tests).
        let allowHTTP = try c.bool("webhooks.allowHttp", default: false)
        settings.allowHTTP = allowHTTP
        for name in names {
            guard WebhookEndpoint.isValidName(name) else {
                throw ConfigurationError(
                    key: "webhooks.endpoints",
                    message: "\"\(name)\" must be lower-case letters and digits, starting with a letter, at most 32")
            }
            guard !settings.endpoints.contains(where: { $0.name == name }) else {
                throw ConfigurationError(key: "webhooks.endpoints", message: "names \"\(name)\" twice")
            }
            let prefix = "webhooks.\(name)."
            // Where its events are POSTed.
            let url = try c.string(prefix + "url", default: "")
            guard url.hasPrefix("https://") || (allowHTTP && url.hasPrefix("http://")) else {
                throw ConfigurationError(
                    key: prefix + "url", message: "must be an https:// URL (http:// only with webhooks.allowHttp)")
            }
            // The event types it takes (empty: all).
            let types = try c.strings(prefix + "events", default: [])
            for type in types where !WebhookEndpoint.eventTypes.contains(type) {
                throw ConfigurationError(
                    key: prefix + "events",
                    message: "\"\(type)\" is not an event type (\(WebhookEndpoint.eventTypes.sorted().joined(separator: ", ")))")
            }
            // The apps whose events it takes (empty: all of appStore.bundleIds).
            let apps = try c.strings(prefix + "bundleIds", default: [])
            for app in apps where !bundleIDs.contains(app) {
                throw ConfigurationError(key: prefix + "bundleIds", message: "\"\(app)\" is not in appStore.bundleIds")
            }
            // The signing secret, or two while rotating (comma-separated), from the environment only.
            let secrets = try c.secretList(prefix + "secret")
            guard (1...2).contains(secrets.count) else {
                throw ConfigurationError(
                    key: prefix + "secret",
                    message:
                        "needs one signing secret, or two while rotating, in \(ConfigLoader.environmentName(for: prefix + "secret"))"
                )
            }
            guard secrets.allSatisfy({ $0.utf8.count >= 16 }) else {
                throw ConfigurationError(key: prefix + "secret", message: "each secret must be at least 16 bytes")
            }
            // The Standard Webhooks headers beside Receiptd-Signature, for receivers that verify with
            // its libraries: the secrets are then whsec_ keys.
            let standard = try c.bool(prefix + "standardWebhooks", default: false)
            guard !standard || secrets.allSatisfy({ StandardWebhooksSignature.key($0) != nil }) else {
                throw ConfigurationError(
                    key: prefix + "secret",
                    message:
                        "with standardWebhooks, each secret must be whsec_ and the base64 of a \(StandardWebhooksSignature.keyBytes.lowerBound)–\(StandardWebhooksSignature.keyBytes.upperBound) byte key"
                )
            }
            settings.endpoints.append(
                WebhookEndpoint(
                    name: name, url: url, eventTypes: types.isEmpty ? nil : Set(types),
                    bundleIDs: apps.isEmpty ? nil : Set(apps), secrets: secrets,
                    // Deliveries in flight to it at once (different subscribers; one subscriber's go in order).
                    maxConcurrent: try c.int(prefix + "maxConcurrent", default: 8, range: 1...1_000),
                    // One attempt ends within this; no answer by then is retried.
                    timeout: try c.milliseconds(prefix + "timeoutMs", default: 10_000), standardWebhooks: standard))
        }
        settings.retry = WebhookRetryPolicy(
            // The wait after a first failed attempt; doubled per failure up to the maximum.
            firstDelayMs: Int64(try c.int("webhooks.retry.firstDelayMs", default: 30_000, range: 100...86_400_000)),
            maxDelayMs: Int64(try c.int("webhooks.retry.maxDelayMs", default: 21_600_000, range: 100...86_400_000)),
            // Attempts stop this long after the first; the delivery is then kept as failed.
            giveUpAfterMs: Int64(try c.int("webhooks.retry.giveUpAfterHours", default: 72, range: 1...720)) * 3_600_000)
        // How long a claim lasts past the attempt's timeout (a killed process's deliveries are retried after it).
        settings.leaseMs = Int64(try c.int("webhooks.leaseMs", default: 60_000, range: 1000...3_600_000))
        // How often the outbox is looked at for other processes' deliveries and retries falling due.
        settings.pollMs = Int64(try c.int("webhooks.pollMs", default: 1000, range: 10...60_000))
        // Delivered and failed deliveries are kept this long (replay reaches back as far).
        settings.retentionMs = Int64(try c.int("webhooks.retentionDays", default: 30, range: 1...3650)) * 86_400_000
        return settings
    }

    /// `appStore.serverApi.*`: the base URLs, the key id and issuer id, and the `.p8` key from
    /// `RECEIPTD_APP_STORE_SERVER_API_PRIVATE_KEY` (or `…_FILE`). All three or none; `server_api`
    /// needs them (the simulator makes its own).
    static func loadServerAPISettings(_ c: ConfigLoader, simulator: Bool, verifier: VerifyPurchase.Verifier)
        throws(ConfigurationError) -> ServerAPISettings
    {
        var settings = ServerAPISettings()
        // The App Store Server API's hosts (Docs/apple-protocols.md §4.2).
        settings.productionURL = try c.string("appStore.serverApi.productionUrl", default: settings.productionURL)
        settings.sandboxURL = try c.string("appStore.serverApi.sandboxUrl", default: settings.sandboxURL)
        // The In-App Purchase key's id (App Store Connect → Users and Access → Integrations → In-App Purchase).
        let keyID = try c.string("appStore.serverApi.keyId", default: "")
        // The team's issuer id (a UUID, same page).
        let issuerID = try c.string("appStore.serverApi.issuerId", default: "")
        // The .p8 key itself: a secret.
        let key = try c.secret("appStore.serverApi.privateKey")
        switch (keyID.isEmpty, issuerID.isEmpty, key) {
        case (true, true, nil):
            guard verifier == .verifyReceipt || simulator else {
                throw ConfigurationError(
                    key: "appStore.verifier",
                    message:
                        "\(verifier.rawValue) needs appStore.serverApi.keyId, issuerId and RECEIPTD_APP_STORE_SERVER_API_PRIVATE_KEY"
                )
            }
        case (false, false, let key?):
            do {
                settings.credentials = try ServerAPIToken.Credentials(keyID: keyID, issuerID: issuerID, p8: key)
            } catch {
                throw ConfigurationError(key: "appStore.serverApi.privateKey", message: error.description)
            }
        default:
            throw ConfigurationError(
                key: "appStore.serverApi",
                message:
                    "keyId, issuerId and the private key (RECEIPTD_APP_STORE_SERVER_API_PRIVATE_KEY) go together: set all three or none"
            )
        }
        return settings
    }

    private static func loadSignedDataSettings(_ c: ConfigLoader) throws(ConfigurationError) -> SignedDataSettings {
        // Trust anchors for Apple's signed data: DER or PEM files replacing the built-in Apple Root
        // CA - G3. Never the root a JWS sends.
        let paths = try c.strings("appStore.rootCertificates", default: [])
        var roots: [Certificate] = paths.isEmpty ? [AppleRootCA.g3] : []
        for path in paths {
            guard let data = FileManager.default.contents(atPath: path) else {
                throw ConfigurationError(key: "appStore.rootCertificates", message: "cannot read \(path)")
            }
            let certificate =
                (try? Certificate(derEncoded: Array(data)))
                ?? String(validating: Array(data), as: UTF8.self).flatMap { try? Certificate(pemEncoded: $0) }
            guard let certificate else {
                throw ConfigurationError(key: "appStore.rootCertificates", message: "\(path) is not a DER or PEM certificate")
            }
            roots.append(certificate)
        }
        // The apps' App Store ids (App Store Connect → App Information → Apple ID), as strings.
        var ids: [Int64] = []
        for text in try c.strings("appStore.appAppleIds", default: []) {
            guard let id = Int64(text), id > 0 else {
                throw ConfigurationError(key: "appStore.appAppleIds", message: "must be positive integers, got \"\(text)\"")
            }
            ids.append(id)
        }
        // Environments whose signed data is accepted: production, sandbox or both.
        var environments: Set<AppStoreEnvironment> = []
        for name in try c.strings("appStore.environments", default: ["production", "sandbox"]) {
            guard let environment = AppStoreEnvironment(rawValue: name) else {
                throw ConfigurationError(
                    key: "appStore.environments", message: "must list production and/or sandbox, got \"\(name)\"")
            }
            environments.insert(environment)
        }
        guard !environments.isEmpty else {
            throw ConfigurationError(key: "appStore.environments", message: "must list production and/or sandbox")
        }
        // When certificates must be valid: at the payload's signedDate (Apple's offline rule) or now.
        let time = try c.choice(
            "appStore.signedDataValidationTime", default: "signedDate",
            allowed: SignedDataVerifier.ValidationTime.allCases.map(\.rawValue))
        return SignedDataSettings(
            roots: roots, appAppleIDs: ids, environments: environments,
            validationTime: SignedDataVerifier.ValidationTime(rawValue: time) ?? .signedDate)
    }

    /// `{"premium": ["monthly", "yearly"]}`; a missing file means no entitlements.
    private static func loadEntitlements(_ path: String) throws(ConfigurationError) -> [String: [String]] {
        guard let data = FileManager.default.contents(atPath: path) else { return [:] }
        let refused = ConfigurationError(key: "entitlements.file", message: "\(path) is not a JSON object of product-id arrays")
        guard case .object(let members)? = try? JSONValue.parse(Array(data)) else { throw refused }
        var entitlements: [String: [String]] = [:]
        for (name, value) in members {
            guard case .array(let items) = value else { throw refused }
            entitlements[name.string] = try items.map { item throws(ConfigurationError) in
                guard case .string(let product) = item else { throw refused }
                return product
            }
        }
        return entitlements
    }

    /// `{"lifetime": {"type": "non_consumable"}, "pass": {"type": "non_renewing", "duration": "P1M"}}`;
    /// a missing file declares nothing.
    private static func loadCatalog(_ path: String) throws(ConfigurationError) -> Catalog {
        guard let data = FileManager.default.contents(atPath: path) else { return Catalog() }
        let refused = ConfigurationError(key: "products.file", message: "\(path) is not a JSON object of {\"type\": …} objects")
        guard case .object(let specs)? = try? JSONValue.parse(Array(data)) else { throw refused }
        var products: [String: Catalog.Kind] = [:]
        for (name, spec) in specs {
            let id = name.string
            guard case .string(let type)? = spec["type"] else { throw refused }
            let duration: String?
            switch spec["duration"] {
            case nil, .null?: duration = nil
            case .string(let text)?: duration = text
            default: throw refused
            }
            switch (type, duration) {
            case ("auto_renewable", nil): products[id] = .autoRenewable
            case ("non_consumable", nil): products[id] = .nonConsumable
            case ("consumable", nil): products[id] = .consumable
            case ("non_renewing", let text?):
                guard let duration = CalendarDuration(iso8601: text) else {
                    throw ConfigurationError(
                        key: "products.file",
                        message: "\(id): duration must be an ISO 8601 duration such as P1M or P30D, got \"\(text)\"")
                }
                products[id] = .nonRenewing(duration)
            case ("non_renewing", nil):
                throw ConfigurationError(key: "products.file", message: "\(id): a non_renewing product needs a duration")
            default:
                throw ConfigurationError(
                    key: "products.file",
                    message: "\(id): type must be auto_renewable, non_renewing (with a duration), non_consumable or consumable")
            }
        }
        return Catalog(products)
    }

    private static func isIPLiteral(_ host: String) -> Bool {
        var v4 = in_addr()
        var v6 = in6_addr()
        return inet_pton(AF_INET, host, &v4) == 1 || inet_pton(AF_INET6, host, &v6) == 1
    }
}

extension Int {
    fileprivate var nonZero: Int? { self == 0 ? nil : self }
}
