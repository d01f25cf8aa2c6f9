import Crypto
package import CustomerOffers
import FoundationEssentials
package import Offers
import ReceiptCore
package import Retention

extension ServiceConfiguration {
    /// `offers.file`, `appStore.offers.*` (Docs/offers.md) and `retention.file` (Docs/retention.md).
    package struct OfferSettings: Sendable {
        package var rules = OfferRules()
        /// What Apple's Retention Messaging requests are answered (none: always Apple's default message).
        package var retention = RetentionRules()
        /// nil: offers are refused `501 offers_not_configured`.
        package var key: SignOffer.Key?

        package init(rules: OfferRules = OfferRules(), key: SignOffer.Key? = nil) {
            self.rules = rules
            self.key = key
        }

        static func read(_ c: ConfigLoader, configDirectory: String, serverAPI: SignOffer.Key?) throws(ConfigurationError)
            -> OfferSettings
        {
            var settings = OfferSettings()
            // Which promotional offers who may have, and the subscription groups (a JSON file).
            let path = try c.string("offers.file", default: configDirectory + "/offers.json")
            if let data = FileManager.default.contents(atPath: path) {
                do { settings.rules = try OfferRules(json: Array(data)) } catch {
                    throw ConfigurationError(key: "offers.file", message: "\(path): \(error.description)")
                }
            }
            // Which retention answer for which customer (a JSON file).
            let retentionPath = try c.string("retention.file", default: configDirectory + "/retention.json")
            if let data = FileManager.default.contents(atPath: retentionPath) {
                do { settings.retention = try RetentionRules(json: Array(data)) } catch {
                    throw ConfigurationError(key: "retention.file", message: "\(retentionPath): \(error.description)")
                }
            }
            // A key of its own for offers; by default the In-App Purchase key (appStore.serverApi).
            let keyID = try c.string("appStore.offers.keyId", default: "")
            let issuerID = try c.string("appStore.offers.issuerId", default: "")
            let key = try c.secret("appStore.offers.privateKey")
            switch (keyID.isEmpty, issuerID.isEmpty, key) {
            case (true, true, nil):
                settings.key = serverAPI
            case (false, false, let pem?):
                guard let parsed = try? P256.Signing.PrivateKey(pemRepresentation: pem) else {
                    throw ConfigurationError(
                        key: "appStore.offers.privateKey", message: "is not a PEM (PKCS#8) EC P-256 private key")
                }
                settings.key = SignOffer.Key(keyID: keyID, issuerID: issuerID, key: parsed)
            default:
                throw ConfigurationError(
                    key: "appStore.offers",
                    message:
                        "keyId, issuerId and the private key (RECEIPTD_APP_STORE_OFFERS_PRIVATE_KEY) go together: set all three or none"
                )
            }
            return settings
        }
    }
}
