import Entitlements
import FoundationEssentials
import JSON

extension ServiceConfiguration {
    /// `entitlements.*` and `products.file`: entitlement name → product ids, each product's kind, and
    /// the derivation's policy.
    static func readEntitlements(_ c: ConfigLoader, configDirectory: String) throws(ConfigurationError)
        -> (
            entitlements: [String: [String]], grandfathering: [String: Grandfathering], catalog: Catalog,
            policy: DerivationPolicy
        )
    {
        // Entitlement name → product ids (and who is grandfathered), a JSON object in its own file.
        let entitlementsFile = try c.string("entitlements.file", default: configDirectory + "/entitlements.json")
        let (entitlements, grandfathering) = try loadEntitlements(entitlementsFile)
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
        return (entitlements, grandfathering, catalog, policy)
    }

    /// `{"premium": ["monthly", "yearly"]}`, or per entitlement `{"products": [...],
    /// "grandfathered": {"before_version": "3.0", "platforms"?: ["iOS"]}}`; a missing file means
    /// no entitlements.
    private static func loadEntitlements(_ path: String) throws(ConfigurationError)
        -> ([String: [String]], [String: Grandfathering])
    {
        guard let data = FileManager.default.contents(atPath: path) else { return ([:], [:]) }
        func refused(_ why: String) -> ConfigurationError {
            ConfigurationError(key: "entitlements.file", message: "\(path): \(why)")
        }
        guard case .object(let members)? = try? JSONValue.parse(Array(data)) else {
            throw refused("not a JSON object of entitlements")
        }
        func strings(_ value: JSONValue?, _ at: String) throws(ConfigurationError) -> [String] {
            guard case .array(let items)? = value else { throw refused("\(at) must be an array of strings") }
            return try items.map { item throws(ConfigurationError) in
                guard case .string(let text) = item else { throw refused("\(at) must be an array of strings") }
                return text
            }
        }
        var entitlements: [String: [String]] = [:]
        var grandfathering: [String: Grandfathering] = [:]
        for (name, value) in members {
            switch value {
            case .array:
                entitlements[name.string] = try strings(value, name.string)
            case .object(let fields):
                for key in fields.keys where !["products", "grandfathered"].contains(key.string) {
                    throw refused("\(name.string): unknown member \"\(key.string)\"")
                }
                entitlements[name.string] =
                    try fields["products"].map { v throws(ConfigurationError) in
                        try strings(v, "\(name.string).products")
                    } ?? []
                guard let rule = fields["grandfathered"] else { continue }
                let at = "\(name.string).grandfathered"
                guard case .object(let spec) = rule else { throw refused("\(at) must be an object") }
                for key in spec.keys where !["before_version", "platforms"].contains(key.string) {
                    throw refused("\(at): unknown member \"\(key.string)\"")
                }
                guard case .string(let version)? = spec["before_version"], AppVersion.isValid(version) else {
                    throw refused("\(at).before_version must be a version of dotted numbers, e.g. \"3.0\" or \"412\"")
                }
                grandfathering[name.string] = Grandfathering(
                    beforeVersion: version,
                    platforms: try spec["platforms"].map { v throws(ConfigurationError) in try strings(v, "\(at).platforms") })
            default:
                throw refused("\(name.string) must be an array of product ids or an object")
            }
        }
        return (entitlements, grandfathering)
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
