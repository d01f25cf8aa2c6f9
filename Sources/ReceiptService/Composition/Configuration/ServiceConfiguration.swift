package import Analytics
import AppStore
import CustomerOffers
package import Entitlements
import FoundationEssentials
package import HTTPServer
package import Logging
package import ReceiptCore
package import Storage
package import Webhooks

/// The whole effective configuration of receiptd, validated in one place: ``load(configDirectory:environment:)``
/// reads every key through one ``ConfigLoader`` (so `check-config` prints them all) and checks what
/// spans modules. Each module's settings are its own type (`HTTPServerConfiguration`,
/// `DatabaseSettings`, `WebhookSettings`, `Refresher.Settings`, …); the readers beside this file
/// turn keys into them, each documented at its read. Docs/configuration.md lists every key.
package struct ServiceConfiguration: Sendable {
    /// `development`, `production` or `test`; chooses `Config/<environment>.json`.
    package var environment: String
    /// The HTTP server: bind address, limits, timeouts.
    package var http: HTTPServerConfiguration
    /// SQLite or PostgreSQL: where, how many connections, where the migrations are.
    package var database: DatabaseSettings
    /// Log level.
    package var logLevel: Logger.Level
    /// `json` (one object per line) or `text` (swift-log's human-readable lines); by default text
    /// in `development`, JSON elsewhere.
    package var logFormat = "json"
    /// The OpenAPI document served at GET /openapi.yaml (`openapi.yaml` beside `Config/`).
    package var openAPIFile = "openapi.yaml"
    /// Apple's verifyReceipt: URLs, the app(s), the shared secret, timeouts, retries.
    package var appStore: AppStoreSettings
    /// Offers: the rules (`offers.file`) and the key they are signed with (`appStore.offers.*`).
    package var offers = OfferSettings()
    /// Google Play: the apps, the service account, the acknowledgement queue (`googlePlay.*`).
    package var googlePlay = GooglePlaySettings()
    /// API keys by role and the ownership policy.
    package var api: APISettings
    /// Entitlement name → product ids, from `entitlements.file`.
    package var entitlements: [String: [String]]
    /// Entitlement name → who keeps it for life for having got the app before a version, from
    /// `entitlements.file` (Docs/offers.md "Grandfathering").
    package var grandfathering: [String: Grandfathering] = [:]
    /// What kind each product is, from `products.file`.
    package var catalog = Catalog()
    /// Limits on POST /v1/receipts (`limits.*`); off unless configured (the loader's defaults are on).
    package var limits = RateLimiter.Settings()
    /// The background refresher (`refresher.*`); off unless configured (the loader's default is on).
    package var refresher = Refresher.Settings()
    /// The derivation's policy knobs (`entitlements.billingRetryEntitles`, `entitlements.familySharedCounts`).
    package var policy = DerivationPolicy()
    /// Outbound webhooks (`webhooks.*`); none configured: off.
    package var webhooks = WebhookSettings()
    /// Money and the charts (`analytics.*`).
    package var analytics = AnalyticsSettings()
    /// The listener for RevenueCat's client SDKs (`revenueCat.*`, `offerings.file`).
    package var revenueCat = RevenueCatSettings()
    /// Whether this instance keeps the chart rollups (`analytics.keepRollups`); another instance
    /// or `receiptd build-rollups` must when it does not.
    package var keepRollups = true

    package init(
        environment: String, http: HTTPServerConfiguration, database: DatabaseSettings, logLevel: Logger.Level,
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
        EntitlementSettings(
            rules: EntitlementRules(entitlements, grandfathering: grandfathering), catalog: catalog, policy: policy)
    }

    /// The environments with a meaning.
    package static let environments = ["development", "production", "test"]

    /// Loads and validates the configuration.
    /// - Parameters:
    ///   - configDirectory: the folder with `default.json` and `<environment>.json`.
    ///   - environment: the process environment (injected for tests).
    /// - Returns: the configuration and the loader, whose ``ConfigLoader/entries`` list every
    ///   effective value with secrets redacted.
    package static func load(
        configDirectory: String, environment: [String: String] = ProcessInfo.processInfo.environment
    ) async throws -> (ServiceConfiguration, ConfigLoader) {
        let name = environment[ConfigLoader.environmentName(for: "environment")] ?? "development"
        guard environments.contains(name) else {
            throw ConfigurationError(
                key: "environment", message: "must be one of \(environments.joined(separator: ", ")), got \"\(name)\"")
        }
        let c = try await ConfigLoader(configDirectory: configDirectory, environmentName: name, environment: environment)
        _ = try c.choice("environment", default: name, allowed: environments)
        let http = try HTTPServerConfiguration.read(c)
        let database = try DatabaseSettings.read(c)
        let level = try c.choice("log.level", default: "info", allowed: Logger.Level.allCases.map(\.rawValue))
        let appStore = try AppStoreSettings.read(c)
        let api = try APISettings.read(c)
        if name == "production" && api.secretKeys.isEmpty {
            throw ConfigurationError(key: "api.secretKeys", message: "must be set in production")
        }
        let (entitlements, grandfathering, catalog, policy) = try readEntitlements(c, configDirectory: configDirectory)
        var configuration = ServiceConfiguration(
            environment: name, http: http, database: database, logLevel: Logger.Level(rawValue: level)!,
            appStore: appStore, api: api, entitlements: entitlements, catalog: catalog, policy: policy)
        configuration.grandfathering = grandfathering
        configuration.googlePlay = try GooglePlaySettings.read(c)
        // Docs/google-play.md: a push without Google's token is anyone's claim; never in production.
        if name == "production" && configuration.googlePlay.allowUnauthenticatedNotifications {
            throw ConfigurationError(
                key: "googlePlay.notifications.allowUnauthenticated",
                message: "must be false in production: an unauthenticated push is anyone's claim")
        }
        configuration.offers = try OfferSettings.read(
            c, configDirectory: configDirectory,
            serverAPI: appStore.serverAPI.credentials.map {
                SignOffer.Key(keyID: $0.keyID, issuerID: $0.issuerID, key: $0.key)
            })
        configuration.limits = try RateLimiter.Settings.read(c)
        configuration.refresher = try Refresher.Settings.read(c)
        configuration.webhooks = try WebhookSettings.read(c, bundleIDs: appStore.bundleIDs)
        configuration.analytics = try AnalyticsSettings.read(c)
        // Docs/analytics.md: a rate nobody published is a guess; never in production.
        if name == "production" && !configuration.analytics.simulatedRates.isEmpty {
            throw ConfigurationError(
                key: "analytics.simulatedRates", message: "must be empty in production: load the ECB's rates instead")
        }
        configuration.keepRollups = try c.bool("analytics.keepRollups", default: true)
        configuration.openAPIFile = try c.string("api.openapiFile", default: "openapi.yaml")
        configuration.revenueCat = try RevenueCatSettings.read(c, configDirectory: configDirectory, catalog: catalog)
        configuration.logFormat = try c.choice(
            "log.format", default: name == "development" ? "text" : "json", allowed: ["json", "text"])
        return (configuration, c)
    }
}
