import Entitlements
import FoundationEssentials
package import RevenueCatProtocol

extension ServiceConfiguration {
    /// The listener for RevenueCat's client SDKs (`revenueCat.*`, Docs/revenuecat-sdk.md): off
    /// unless `revenueCat.port` is set; its keys and the offerings it serves.
    package struct RevenueCatSettings: Sendable {
        /// The port, on the HTTP server's address; nil: no listener.
        package var port: Int?
        /// The apps' public SDK keys, each naming its store by its prefix (`appl_`, `mac_`, `goog_`).
        package var keys: [String] = []
        /// What the apps sell (`offerings.file`).
        package var offerings = Offerings()

        package init(port: Int? = nil, keys: [String] = [], offerings: Offerings = Offerings()) {
            self.port = port
            self.keys = keys
            self.offerings = offerings
        }

        /// `revenueCat.port`, `revenueCat.keys` (a secret list), `offerings.file`.
        static func read(_ c: ConfigLoader, configDirectory: String, catalog: Catalog) throws(ConfigurationError)
            -> RevenueCatSettings
        {
            var settings = RevenueCatSettings()
            // The listener's own port (0: any free one, for tests); unset: off.
            let port = try c.int("revenueCat.port", default: -1, range: -1...65_535)
            settings.port = port < 0 ? nil : port
            // The SDK keys the apps are configured with: from the environment or a secret file
            // only, each with its store's prefix as the SDKs check it.
            settings.keys = try c.secretList("revenueCat.keys")
            for key in settings.keys where SDKKeys.platform(ofKey: key) == nil {
                throw ConfigurationError(
                    key: "revenueCat.keys", message: "each key starts with appl_ or mac_ (App Store) or goog_ (Google Play)")
            }
            // What the apps sell, served as the SDKs' offerings (a JSON file; none: no offerings).
            let path = try c.string("offerings.file", default: configDirectory + "/offerings.json")
            if let data = FileManager.default.contents(atPath: path) {
                do { settings.offerings = try Offerings(json: Array(data), catalog: catalog) } catch {
                    throw ConfigurationError(key: "offerings.file", message: "\(path): \(error.description)")
                }
            }
            return settings
        }
    }
}
