import Entitlements
import FoundationEssentials
import JSON

extension ServiceConfiguration {
    /// `entitlements.*` and `products.file`: entitlement name → product ids, each product's kind, and
    /// the derivation's policy.
    static func readEntitlements(_ c: ConfigLoader, configDirectory: String) throws(ConfigurationError)
        -> (entitlements: [String: [String]], catalog: Catalog, policy: DerivationPolicy)
    {
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
        return (entitlements, catalog, policy)
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
}
