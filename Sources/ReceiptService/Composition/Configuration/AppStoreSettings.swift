package import AppStore
package import CustomerOffers
package import Entitlements
import FoundationEssentials
package import Notifications
package import ReceiptCore
package import Resilience
package import StoreCalls
import SwiftASN1
import Webhooks
package import X509

extension ServiceConfiguration {
    /// How receiptd reaches Apple.
    package struct AppStoreSettings: Sendable {
        package var productionURL: String
        package var sandboxURL: String
        /// Run the built-in App Store simulator in-process and send every verification to it.
        package var simulator: Bool
        /// Plain-http URLs allowed (the simulator, tests).
        package var allowHTTP: Bool
        /// The apps whose receipts are accepted; a receipt for another bundle id is refused.
        package var bundleIDs: [String]
        /// The shared secret sent as `password`; from the environment only.
        package var sharedSecret: String?
        package var connectTimeout: Duration
        package var maxResponseBytes: Int
        package var maxRetries: Int
        package var attemptTimeout: Duration
        package var deadline: Duration
        /// How Apple's signed data (V2 notifications, StoreKit 2 transactions) is verified.
        package var signedData = SignedDataSettings()
        /// When to stop calling Apple during an outage, and for how long.
        package var breaker = CircuitBreaker.Policy()
        /// Verifications talking to Apple at once; more wait their turn. Throughput is this over
        /// Apple's latency: 1,000 in flight at 300 ms is 3,300 verifications a second.
        package var maxConcurrentCalls = 1_000
        /// `appStore.verifier`: who answers for a posted app receipt.
        package var verifier: VerifyPurchase.Verifier = .verifyReceipt
        /// The App Store Server API (`appStore.serverApi.*`).
        package var serverAPI = ServerAPISettings()
        /// Catching up on missed notifications (`appStore.notificationHistory.*`).
        package var notificationHistory = NotificationCatchUp.Settings()
        /// Answering `CONSUMPTION_REQUEST` (`appStore.consumption.*`).
        package var consumption = AnswerConsumptionRequest.Settings()
        /// `appStore.finishConsumables`: receiptd manages consumables' delivery and finishes each
        /// one stored for an app user at Apple (Finish Transaction).
        package var finishConsumables = false
        /// `appStore.setAppAccountTokens`: receiptd tells Apple whose each purchase is (Set App
        /// Account Token), with a token it keeps per person.
        package var setAppAccountTokens = false
        /// Mass renewal-date extensions (`appStore.massExtensions.*`).
        package var massExtensions = MassExtensions.Settings()
        /// App Store Connect accounts besides the default one (`appStore.accounts`), each with its
        /// apps and secrets; the default (`sharedSecret`, `serverAPI`) holds the apps none claims.
        package var accounts: [AppStoreAccounts.Account] = []

        /// Every app with its account's secrets; `offerKey` is the default account's offer key
        /// (`appStore.offers.*`, which defaults to its In-App Purchase key when read).
        package func appStoreAccounts(offerKey: SignOffer.Key?) -> AppStoreAccounts {
            AppStoreAccounts(
                bundleIDs: bundleIDs,
                default: .init(
                    name: "default", bundleIDs: [], sharedSecret: sharedSecret, serverAPI: serverAPI.credentials,
                    offerKey: offerKey),
                named: accounts)
        }

        /// What the built-in simulator serves: the default account's first app as its own, and
        /// each other account's apps with that account's shared secret and key.
        package var simulatedApps:
            (
                main: String, others: [(bundleID: String, sharedSecret: String?, credentials: ServerAPIToken.Credentials?)]
            )
        {
            let claimed = Set(accounts.flatMap(\.bundleIDs))
            return (
                bundleIDs.first { !claimed.contains($0) } ?? bundleIDs[0],
                accounts.flatMap { account in account.bundleIDs.map { ($0, account.sharedSecret, account.serverAPI) } }
            )
        }

        /// Whether any account has an In-App Purchase key (the Server API can be called).
        package var hasServerAPIKey: Bool { serverAPI.credentials != nil || accounts.contains { $0.serverAPI != nil } }

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

        /// `appStore.*`: verifyReceipt, the Server API, signed data, the breaker, catch-up, consumption.
        static func read(_ c: ConfigLoader) throws(ConfigurationError) -> AppStoreSettings {
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
            appStore.signedData = try SignedDataSettings.read(c)
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
                        "appStore.verifier", default: "verify_receipt", allowed: VerifyPurchase.Verifier.allCases.map(\.rawValue))
                )
                ?? .verifyReceipt
            appStore.serverAPI = try ServerAPISettings.read(c, simulator: appStore.simulator, verifier: appStore.verifier)
            appStore.notificationHistory = NotificationCatchUp.Settings(
                // Get Notification History at start and every intervalMs (with a Server API key).
                enabled: try c.bool("appStore.notificationHistory.enabled", default: true),
                intervalMs: Int64(
                    try c.int("appStore.notificationHistory.intervalMs", default: 3_600_000, range: 1000...86_400_000)),
                // Each catch-up starts this long before the newest stored notification.
                overlapMs: Int64(try c.int("appStore.notificationHistory.overlapMs", default: 3_600_000, range: 0...86_400_000)),
                // With no notification stored yet, the first catch-up looks back this many days (Apple keeps 180).
                lookbackMs: Int64(try c.int("appStore.notificationHistory.lookbackDays", default: 7, range: 1...180)) * 86_400_000
            )
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
            appStore.accounts = try readAccounts(c, bundleIDs: appStore.bundleIDs)
            if appStore.verifier != .verifyReceipt && !appStore.simulator {
                // Every app is asked of the Server API: each account holding one needs its key.
                for account in appStore.appStoreAccounts(offerKey: nil).accounts where account.serverAPI == nil {
                    guard account.name != "default" else {
                        throw ConfigurationError(
                            key: "appStore.verifier",
                            message:
                                "\(appStore.verifier.rawValue) needs appStore.serverApi.keyId, issuerId and RECEIPTD_APP_STORE_SERVER_API_PRIVATE_KEY"
                        )
                    }
                    throw ConfigurationError(
                        key: "appStore.account.\(account.name).serverApi",
                        message: "\(appStore.verifier.rawValue) needs this account's In-App Purchase key")
                }
            }
            if appStore.consumption.enabled && !appStore.hasServerAPIKey && !appStore.simulator {
                throw ConfigurationError(
                    key: "appStore.consumption.enabled",
                    message:
                        "answering consumption requests needs the App Store Server API (appStore.serverApi.keyId, issuerId, key)"
                )
            }
            // Finish each consumable stored for an app user at Apple (the app then does not call finish()).
            appStore.finishConsumables = try c.bool("appStore.finishConsumables", default: false)
            // Tell Apple whose each purchase is: later notifications name the person.
            appStore.setAppAccountTokens = try c.bool("appStore.setAppAccountTokens", default: false)
            for (key, on) in [
                ("appStore.finishConsumables", appStore.finishConsumables),
                ("appStore.setAppAccountTokens", appStore.setAppAccountTokens),
            ] where on && !appStore.hasServerAPIKey && !appStore.simulator {
                throw ConfigurationError(
                    key: key, message: "this call needs the App Store Server API (appStore.serverApi.keyId, issuerId, key)")
            }
            // How often Apple is asked whether a mass extension is complete (it takes hours or days).
            appStore.massExtensions.pollMs =
                Int64(
                    try c.int("appStore.massExtensions.pollSeconds", default: 300, range: 1...86_400)) * 1000
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
            return appStore
        }

        /// `appStore.accounts` (names: lower-case letters and digits), each from
        /// `appStore.account.<name>.*`: its `bundleIds` (configured apps, claimed by no other
        /// account), its shared secret and In-App Purchase key from the environment
        /// (`RECEIPTD_APP_STORE_ACCOUNT_<NAME>_SHARED_SECRET`, `…_SERVER_API_PRIVATE_KEY`, or `…_FILE`).
        static func readAccounts(_ c: ConfigLoader, bundleIDs: [String]) throws(ConfigurationError) -> [AppStoreAccounts.Account]
        {
            // Names of the App Store Connect accounts besides the default one; each configured under appStore.account.<name>.
            let names = try c.strings("appStore.accounts", default: [])
            var accounts: [AppStoreAccounts.Account] = []
            for name in names {
                guard WebhookEndpoint.isValidName(name), name != "default" else {
                    throw ConfigurationError(
                        key: "appStore.accounts",
                        message:
                            "\"\(name)\" must be lower-case letters and digits, starting with a letter, at most 32, not default")
                }
                guard !accounts.contains(where: { $0.name == name }) else {
                    throw ConfigurationError(key: "appStore.accounts", message: "names \"\(name)\" twice")
                }
                let prefix = "appStore.account.\(name)."
                // The apps of this account (each one of appStore.bundleIds).
                let apps = try c.strings(prefix + "bundleIds", default: [])
                guard !apps.isEmpty else { throw ConfigurationError(key: prefix + "bundleIds", message: "must name its apps") }
                for app in apps where !bundleIDs.contains(app) {
                    throw ConfigurationError(key: prefix + "bundleIds", message: "\"\(app)\" is not in appStore.bundleIds")
                }
                for app in apps {
                    if let other = accounts.first(where: { $0.bundleIDs.contains(app) }) {
                        throw ConfigurationError(
                            key: prefix + "bundleIds", message: "\"\(app)\" is account \(other.name)'s already")
                    }
                }
                // Its shared secret (App Store Connect → the app → App-Specific Shared Secret, or the account's primary one).
                let secret = try c.secret(prefix + "sharedSecret")
                // Its In-App Purchase key: the key id, the issuer id and the .p8 (a secret); all three or none.
                let keyID = try c.string(prefix + "serverApi.keyId", default: "")
                let issuerID = try c.string(prefix + "serverApi.issuerId", default: "")
                let key = try c.secret(prefix + "serverApi.privateKey")
                var credentials: ServerAPIToken.Credentials?
                switch (keyID.isEmpty, issuerID.isEmpty, key) {
                case (true, true, nil): break
                case (false, false, let key?):
                    do {
                        credentials = try ServerAPIToken.Credentials(keyID: keyID, issuerID: issuerID, p8: key)
                    } catch {
                        throw ConfigurationError(key: prefix + "serverApi.privateKey", message: error.description)
                    }
                default:
                    throw ConfigurationError(
                        key: prefix + "serverApi",
                        message:
                            "keyId, issuerId and the private key (\(ConfigLoader.environmentName(for: prefix + "serverApi.privateKey"))) go together: set all three or none"
                    )
                }
                accounts.append(
                    AppStoreAccounts.Account(
                        name: name, bundleIDs: apps, sharedSecret: secret, serverAPI: credentials,
                        offerKey: credentials.map { SignOffer.Key(keyID: $0.keyID, issuerID: $0.issuerID, key: $0.key) }))
            }
            return accounts
        }
    }

    /// How receiptd reaches the App Store Server API (Docs/apple-protocols.md §4).
    package struct ServerAPISettings: Sendable {
        /// Defaults: the hosts Apple's libraries use since 2026-05 (§4.2).
        package var productionURL = "https://api.storekit.apple.com"
        package var sandboxURL = "https://api.storekit-sandbox.apple.com"
        /// The In-App Purchase key with its key id and issuer id; nil when none is configured (the
        /// Server API is then never called, and a posted `transaction_id` is refused as misconfigured).
        package var credentials: ServerAPIToken.Credentials?

        package init(
            productionURL: String = "https://api.storekit.apple.com",
            sandboxURL: String = "https://api.storekit-sandbox.apple.com",
            credentials: ServerAPIToken.Credentials? = nil
        ) {
            self.productionURL = productionURL
            self.sandboxURL = sandboxURL
            self.credentials = credentials
        }

        /// `appStore.serverApi.*`: the base URLs, the key id and issuer id, and the `.p8` key from
        /// `RECEIPTD_APP_STORE_SERVER_API_PRIVATE_KEY` (or `…_FILE`). All three or none; `server_api`
        /// needs them (the simulator makes its own).
        static func read(_ c: ConfigLoader, simulator: Bool, verifier: VerifyPurchase.Verifier)
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
                break  // `server_api` and `shadow` then need every account's apps to have another key (checked after).
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
    }

    /// Trust anchors and expected claims for Apple's JWS (Docs/apple-protocols.md §3.7).
    package struct SignedDataSettings: Sendable {
        /// `appStore.rootCertificates`: Apple Root CA - G3 (built in) by default.
        package var roots: [Certificate] = [AppleRootCA.g3]
        /// `appStore.appAppleIds`: the apps' App Store ids; production notifications must name one.
        package var appAppleIDs: [Int64] = []
        /// `appStore.environments`: which environments' signed data is accepted.
        package var environments: Set<StoreEnvironment> = [.production, .sandbox]
        /// `appStore.signedDataValidationTime`: `signedDate` (default) or `now`.
        package var validationTime: SignedDataVerifier.ValidationTime = .signedDate

        package init(
            roots: [Certificate] = [AppleRootCA.g3], appAppleIDs: [Int64] = [],
            environments: Set<StoreEnvironment> = [.production, .sandbox],
            validationTime: SignedDataVerifier.ValidationTime = .signedDate
        ) {
            self.roots = roots
            self.appAppleIDs = appAppleIDs
            self.environments = environments
            self.validationTime = validationTime
        }

        /// `appStore.rootCertificates`, `appAppleIds`, `environments`, `signedDataValidationTime`.
        static func read(_ c: ConfigLoader) throws(ConfigurationError) -> SignedDataSettings {
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
            var environments: Set<StoreEnvironment> = []
            for name in try c.strings("appStore.environments", default: ["production", "sandbox"]) {
                guard let environment = StoreEnvironment(rawValue: name) else {
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
    }
}
