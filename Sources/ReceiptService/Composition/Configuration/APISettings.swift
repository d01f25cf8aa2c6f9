import ReceiptCore

extension ServiceConfiguration {
    /// Who may call the API.
    package struct APISettings: Sendable {
        /// Keys that may only POST receipts (safe inside an app).
        package var publicKeys: [String]
        /// Keys that may do everything.
        package var secretKeys: [String]
        package var ownershipPolicy: String
        /// Whether GET /metrics asks for a secret key (Prometheus sends it as a bearer token).
        package var metricsRequireKey = true

        package init(publicKeys: [String], secretKeys: [String], ownershipPolicy: String, metricsRequireKey: Bool = true) {
            self.publicKeys = publicKeys
            self.secretKeys = secretKeys
            self.ownershipPolicy = ownershipPolicy
            self.metricsRequireKey = metricsRequireKey
        }

        /// `api.*`, `ownership.policy`, `metrics.requireKey`.
        static func read(_ c: ConfigLoader) throws(ConfigurationError) -> APISettings {
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
            return api
        }
    }
}
