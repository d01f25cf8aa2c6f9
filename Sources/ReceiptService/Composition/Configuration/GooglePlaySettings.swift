package import GooglePlay
package import Notifications
import ReceiptCore
package import StoreCalls
import Workers

extension ServiceConfiguration {
    /// How receiptd reaches Google Play (`googlePlay.*`, Docs/google-play.md). Off until
    /// `googlePlay.packages` names an app; then the service account's key is required (the
    /// simulator makes its own).
    package struct GooglePlaySettings: Sendable {
        /// The Android apps whose purchases are accepted.
        package var packages: [String] = []
        /// Run the built-in Google Play simulator and send every call to it.
        package var simulator = false
        /// Plain-http URLs allowed (the simulator, tests).
        package var allowHTTP = false
        /// The Play Developer API's base URL.
        package var apiURL = "https://androidpublisher.googleapis.com"
        /// Replaces the key file's `token_uri` (the simulator's, tests); nil: the key's own.
        package var tokenURL: String?
        /// The service account's JSON key; from the environment or a secret file only.
        package var serviceAccountKey: ServiceAccountKey?
        package var timeout: Duration = .seconds(15)
        /// The use case's settings (the packages, consuming consumables).
        package var consumeConsumables = false
        /// The acknowledgement queue's retries and pace.
        package var acknowledgements = AcknowledgePlayPurchases.Settings()
        /// The Voided Purchases API's catch-up (`googlePlay.voidedPurchases.*`).
        package var voidedPurchases = CatchUpVoidedPurchases.Settings()
        /// Real-time developer notifications: the push subscription's audience and service account.
        package var notificationAudience = ""
        package var notificationAccount = ""
        /// Where Google's ID-token keys are fetched from; a JWKS file replaces fetching.
        package var certsURL = "https://www.googleapis.com/oauth2/v3/certs"
        package var jwksFile = ""
        /// Accept pushes without an OIDC token (a push subscription without authentication).
        package var allowUnauthenticatedNotifications = false

        package init() {}

        package var isEnabled: Bool { !packages.isEmpty }

        /// Points every call at a loopback stand-in (`googlePlay.simulator`, the tests): its API and
        /// token endpoint, the service account it accepts, the keys and audience of its pushes.
        package mutating func useSimulator(
            apiBase: String, account: ServiceAccountKey, pushAudience: String, pushAccount: String
        ) {
            serviceAccountKey = account
            apiURL = apiBase
            certsURL = apiBase + "/oauth2/v3/certs"
            notificationAudience = pushAudience
            notificationAccount = pushAccount
            allowHTTP = true
        }

        /// `googlePlay.*`.
        static func read(_ c: ConfigLoader) throws(ConfigurationError) -> GooglePlaySettings {
            var settings = GooglePlaySettings()
            // Package names of the Android apps whose purchases are accepted; none: Google Play off.
            settings.packages = try c.strings("googlePlay.packages", default: [])
            // Serve Google Play calls from the built-in simulator (offline development).
            settings.simulator = try c.bool("googlePlay.simulator", default: false)
            // Allow http:// URLs (loopback simulators only).
            settings.allowHTTP = try c.bool("googlePlay.allowHttp", default: false)
            // The Google Play Developer API.
            settings.apiURL = try c.string("googlePlay.apiUrl", default: settings.apiURL)
            // Where the service account signs in; empty: the key file's token_uri.
            let tokenURL = try c.string("googlePlay.tokenUrl", default: "")
            settings.tokenURL = tokenURL.isEmpty ? nil : tokenURL
            settings.timeout = try c.milliseconds("googlePlay.timeoutMs", default: 15_000)
            // Consume consumables (products.json) once stored, so the customer can buy them again.
            settings.consumeConsumables = try c.bool("googlePlay.consumeConsumables", default: false)
            settings.acknowledgements = AcknowledgePlayPurchases.Settings(
                // After a failed acknowledgement: the first wait, doubled per failure up to the maximum.
                retryBaseMs: Int64(try c.int("googlePlay.acknowledge.retryBaseMs", default: 30_000, range: 1000...86_400_000)),
                retryMaxMs: Int64(try c.int("googlePlay.acknowledge.retryMaxMs", default: 3_600_000, range: 1000...86_400_000)),
                // How often the queue is looked at when no purchase rings.
                pollMs: Int64(try c.int("googlePlay.acknowledge.pollMs", default: 10_000, range: 100...3_600_000)))
            settings.voidedPurchases = CatchUpVoidedPurchases.Settings(
                // Read the Voided Purchases API at start and every intervalMs (refunds missed while down).
                enabled: try c.bool("googlePlay.voidedPurchases.enabled", default: true),
                intervalMs: Int64(
                    try c.int("googlePlay.voidedPurchases.intervalMs", default: 3_600_000, range: 1000...86_400_000)),
                // Each read starts this long before where the last one ended.
                overlapMs: Int64(try c.int("googlePlay.voidedPurchases.overlapMs", default: 3_600_000, range: 0...86_400_000)),
                // The first read looks back this many days (Google keeps 30).
                lookbackMs: Int64(try c.int("googlePlay.voidedPurchases.lookbackDays", default: 30, range: 1...30)) * 86_400_000)
            // The push subscription's audience (its endpoint URL unless set otherwise in Pub/Sub).
            settings.notificationAudience = try c.string("googlePlay.notifications.audience", default: "")
            // The service account the push subscription authenticates as.
            settings.notificationAccount = try c.string("googlePlay.notifications.serviceAccountEmail", default: "")
            // Google's ID-token signing keys (a JWKS), fetched and kept an hour.
            settings.certsURL = try c.string("googlePlay.notifications.certsUrl", default: settings.certsURL)
            // A JWKS file instead (no fetching).
            settings.jwksFile = try c.string("googlePlay.notifications.jwksFile", default: "")
            // Accept unauthenticated pushes (never in production).
            settings.allowUnauthenticatedNotifications = try c.bool(
                "googlePlay.notifications.allowUnauthenticated", default: false)
            if settings.notificationAudience.isEmpty != settings.notificationAccount.isEmpty {
                throw ConfigurationError(
                    key: "googlePlay.notifications", message: "audience and serviceAccountEmail go together: set both or neither")
            }
            // The service account's JSON key (RECEIPTD_GOOGLE_PLAY_SERVICE_ACCOUNT_KEY or …_FILE).
            if let json = try c.secret("googlePlay.serviceAccountKey") {
                do {
                    settings.serviceAccountKey = try ServiceAccountKey(json: Array(json.utf8), tokenURI: settings.tokenURL)
                } catch {
                    throw ConfigurationError(key: "googlePlay.serviceAccountKey", message: error.description)
                }
            }
            for package in settings.packages where !PlayIdentifier.isValid(package, as: .packageName) {
                throw ConfigurationError(key: "googlePlay.packages", message: "\"\(package)\" is not an Android package name")
            }
            if settings.isEnabled && settings.serviceAccountKey == nil && !settings.simulator {
                throw ConfigurationError(
                    key: "googlePlay.serviceAccountKey",
                    message: "googlePlay.packages needs the service account's key (RECEIPTD_GOOGLE_PLAY_SERVICE_ACCOUNT_KEY_FILE)"
                )
            }
            if !settings.isEnabled && settings.serviceAccountKey != nil {
                throw ConfigurationError(key: "googlePlay.packages", message: "a service account key is set: name its apps here")
            }
            for (key, url) in [
                ("googlePlay.apiUrl", settings.apiURL), ("googlePlay.tokenUrl", settings.tokenURL ?? "https://"),
                ("googlePlay.notifications.certsUrl", settings.certsURL),
            ] {
                guard url.hasPrefix("https://") || (settings.allowHTTP && url.hasPrefix("http://")) else {
                    throw ConfigurationError(
                        key: key, message: "must be an https:// URL (http:// only with googlePlay.allowHttp)")
                }
            }
            return settings
        }
    }
}
