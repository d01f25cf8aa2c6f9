import JSON

/// `Config/offers.json` is not what Docs/offers.md describes; the message names the member.
package struct OfferRulesError: Error, Sendable, Equatable, CustomStringConvertible {
    package var description: String
}

extension OfferRules {
    /// Reads `{"groups": {"<group>": ["<product>", …]}, "offers": {"<offer id>": {"products"?,
    /// "audience"?, "min_days_since_expiry"?, "max_days_since_expiry"?, "min_tenure_days"?,
    /// "billing_issue"?, "allow_refunded"?, "storefronts"?, "max_per_customer"?, "per_days"?}}}`.
    /// Unknown members are refused (a misspelt rule must not silently allow an offer).
    package init(json bytes: [UInt8]) throws(OfferRulesError) {
        guard let value = try? JSONValue.parse(bytes), case .object(let top) = value else {
            throw OfferRulesError(description: "not a JSON object")
        }
        for key in top.keys where !["groups", "offers"].contains(key.string) {
            throw OfferRulesError(description: "unknown member \"\(key.string)\"")
        }
        func strings(_ v: JSONValue?, _ what: String) throws(OfferRulesError) -> [String] {
            guard case .array(let items)? = v else { throw OfferRulesError(description: "\(what) must be an array of strings") }
            return try items.map { item throws(OfferRulesError) in
                guard case .string(let s) = item, !s.isEmpty else {
                    throw OfferRulesError(description: "\(what) must be an array of strings")
                }
                return s
            }
        }
        var groups: [String: [String]] = [:]
        if let g = top["groups"] {
            guard case .object(let members) = g else { throw OfferRulesError(description: "\"groups\" must be an object") }
            for (name, products) in members { groups[name.string] = try strings(products, "groups.\(name.string)") }
        }
        var offers: [String: OfferRule] = [:]
        if let o = top["offers"] {
            guard case .object(let members) = o else { throw OfferRulesError(description: "\"offers\" must be an object") }
            for (id, spec) in members {
                let at = "offers.\(id.string)"
                guard case .object(let fields) = spec else { throw OfferRulesError(description: "\(at) must be an object") }
                let known = [
                    "products", "audience", "min_days_since_expiry", "max_days_since_expiry", "min_tenure_days", "billing_issue",
                    "allow_refunded", "storefronts", "max_per_customer", "per_days",
                ]
                for key in fields.keys where !known.contains(key.string) {
                    throw OfferRulesError(description: "\(at): unknown rule \"\(key.string)\"")
                }
                func number(_ name: String) throws(OfferRulesError) -> Int64? {
                    guard let v = fields[Identifier(name)], v != .null else { return nil }
                    guard let n = v.int64, n >= 0, case .number = v else {
                        throw OfferRulesError(description: "\(at).\(name) must be a whole number of at least 0")
                    }
                    return n
                }
                func flag(_ name: String) throws(OfferRulesError) -> Bool? {
                    guard let v = fields[Identifier(name)], v != .null else { return nil }
                    guard case .bool(let b) = v else { throw OfferRulesError(description: "\(at).\(name) must be true or false") }
                    return b
                }
                var rule = OfferRule()
                if let p = fields["products"] { rule.products = try strings(p, "\(at).products") }
                if let a = fields["audience"] {
                    guard case .string(let name) = a, let audience = OfferRule.Audience(rawValue: name) else {
                        throw OfferRulesError(description: "\(at).audience must be current, lapsed or any")
                    }
                    rule.audience = audience
                }
                rule.minDaysSinceExpiry = try number("min_days_since_expiry")
                rule.maxDaysSinceExpiry = try number("max_days_since_expiry")
                rule.minTenureDays = try number("min_tenure_days")
                rule.billingIssue = try flag("billing_issue")
                rule.allowRefunded = try flag("allow_refunded") ?? false
                if let s = fields["storefronts"] { rule.storefronts = try strings(s, "\(at).storefronts") }
                rule.maxPerCustomer = try number("max_per_customer").map(Int.init)
                rule.perDays = try number("per_days")
                if rule.perDays != nil && rule.maxPerCustomer == nil {
                    throw OfferRulesError(description: "\(at).per_days needs max_per_customer")
                }
                offers[id.string] = rule
            }
        }
        self.init(groups: groups, offers: offers)
    }
}
