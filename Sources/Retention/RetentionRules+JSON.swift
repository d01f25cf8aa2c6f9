import Analytics
import FoundationEssentials
import JSON

/// `Config/retention.json` is not what Docs/retention.md describes; the message names the member.
package struct RetentionRulesError: Error, Sendable, Equatable, CustomStringConvertible {
    package var description: String
}

extension RetentionRules {
    /// Reads `{"rules": [{"name", "when"?: {…}, and one of "message": "<uuid>",
    /// "alternate_product": {"product_id", "message"}, "promotional_offer": {"offer_id",
    /// "message", "product_id"?, "format"?}}]}`. Unknown members are refused: a misspelt
    /// condition must not silently widen a rule.
    package init(json bytes: [UInt8]) throws(RetentionRulesError) {
        guard let value = try? JSONValue.parse(bytes), case .object(let top) = value else {
            throw Self.error("not a JSON object")
        }
        for key in top.keys where key.string != "rules" { throw Self.error("unknown member \"\(key.string)\"") }
        guard case .array(let items)? = top["rules"] else { throw Self.error("\"rules\" must be an array") }
        var rules: [RetentionRule] = []
        for (i, item) in items.enumerated() {
            guard case .object(let fields) = item else { throw Self.error("rules[\(i)] must be an object") }
            for key in fields.keys
            where !["name", "when", "message", "alternate_product", "promotional_offer"].contains(key.string) {
                throw Self.error("rules[\(i)]: unknown member \"\(key.string)\"")
            }
            guard case .string(let name)? = fields["name"], Self.isName(name) else {
                throw Self.error("rules[\(i)].name must be 1 to 64 letters, digits, `_` or `-`")
            }
            let at = "rules[\(i)] (\(name))"
            guard !rules.contains(where: { $0.name == name }) else { throw Self.error("\(at): the name is used twice") }
            let when = try fields["when"].map { v throws(RetentionRulesError) in try Self.conditions(v, at: at) }
            rules.append(RetentionRule(name: name, when: when ?? RetentionConditions(), answer: try Self.answer(fields, at: at)))
        }
        self.init(rules: rules)
    }

    private static func answer(_ fields: [Identifier: JSONValue], at: String) throws(RetentionRulesError) -> RetentionAnswer {
        let given = ["message", "alternate_product", "promotional_offer"].filter { fields[Identifier($0)] != nil }
        guard given.count == 1 else {
            throw error("\(at) must have exactly one of message, alternate_product, promotional_offer")
        }
        switch given[0] {
        case "message":
            return .message(try uuid(fields["message"], at: "\(at).message"))
        case "alternate_product":
            let o = try object(fields["alternate_product"], at: "\(at).alternate_product", known: ["product_id", "message"])
            return .alternateProduct(
                message: try uuid(o["message"], at: "\(at).alternate_product.message"),
                productID: try identifier(o["product_id"], at: "\(at).alternate_product.product_id"))
        default:
            let path = "\(at).promotional_offer"
            let o = try object(fields["promotional_offer"], at: path, known: ["offer_id", "message", "product_id", "format"])
            var format = RetentionAnswer.Format.jws
            if let f = o["format"] {
                guard case .string(let name) = f, let parsed = RetentionAnswer.Format(rawValue: name) else {
                    throw error("\(path).format must be v1 or jws")
                }
                format = parsed
            }
            return .promotionalOffer(
                message: try uuid(o["message"], at: "\(path).message"),
                offerID: try identifier(o["offer_id"], at: "\(path).offer_id"),
                productID: try o["product_id"].map { v throws(RetentionRulesError) in try identifier(v, at: "\(path).product_id")
                },
                format: format)
        }
    }

    private static func conditions(_ value: JSONValue, at rule: String) throws(RetentionRulesError) -> RetentionConditions {
        let at = "\(rule).when"
        let fields = try object(
            value, at: at,
            known: [
                "products", "in_trial", "in_introductory_offer", "billing_issue", "min_tenure_days", "max_tenure_days",
                "min_price_paid", "max_price_paid", "max_prior_offers", "storefronts", "locales",
            ])
        func flag(_ name: String) throws(RetentionRulesError) -> Bool? {
            guard let v = fields[Identifier(name)] else { return nil }
            guard case .bool(let b) = v else { throw error("\(at).\(name) must be true or false") }
            return b
        }
        func number(_ name: String) throws(RetentionRulesError) -> Int64? {
            guard let v = fields[Identifier(name)] else { return nil }
            guard case .number = v, let n = v.int64, n >= 0 else {
                throw error("\(at).\(name) must be a whole number of at least 0")
            }
            return n
        }
        func strings(_ name: String) throws(RetentionRulesError) -> [String]? {
            guard let v = fields[Identifier(name)] else { return nil }
            guard case .array(let items) = v, !items.isEmpty else {
                throw error("\(at).\(name) must be a non-empty array of strings")
            }
            return try items.map { item throws(RetentionRulesError) in
                guard case .string(let s) = item, !s.isEmpty else {
                    throw error("\(at).\(name) must be a non-empty array of strings")
                }
                return s
            }
        }
        func prices(_ name: String) throws(RetentionRulesError) -> [String: Int64]? {
            guard let v = fields[Identifier(name)] else { return nil }
            guard case .object(let members) = v, !members.isEmpty else {
                throw error("\(at).\(name) must be an object of currency → decimal amount, e.g. {\"USD\": \"4.99\"}")
            }
            var out: [String: Int64] = [:]
            for (currency, amount) in members {
                guard currency.string.utf8.count == 3, currency.string.utf8.allSatisfy({ $0 >= 0x41 && $0 <= 0x5A }) else {
                    throw error("\(at).\(name): \"\(currency.string)\" is not an ISO 4217 code")
                }
                guard case .string(let text) = amount, let milliunits = Money.decimal(text, places: 3) else {
                    throw error(
                        "\(at).\(name).\(currency.string) must be a decimal string with at most three places, e.g. \"4.99\"")
                }
                out[currency.string] = milliunits
            }
            return out
        }
        return RetentionConditions(
            products: try strings("products"), inTrial: try flag("in_trial"),
            inIntroductoryOffer: try flag("in_introductory_offer"),
            billingIssue: try flag("billing_issue"), minTenureDays: try number("min_tenure_days"),
            maxTenureDays: try number("max_tenure_days"), minPricePaid: try prices("min_price_paid"),
            maxPricePaid: try prices("max_price_paid"), maxPriorOffers: try number("max_prior_offers").map { Int(clamping: $0) },
            storefronts: try strings("storefronts"), locales: try strings("locales"))
    }

    private static func object(
        _ value: JSONValue?, at: String, known: [String]
    ) throws(RetentionRulesError) -> [Identifier: JSONValue] {
        guard case .object(let fields)? = value else { throw error("\(at) must be an object") }
        for key in fields.keys where !known.contains(key.string) { throw error("\(at): unknown member \"\(key.string)\"") }
        return fields
    }

    private static func uuid(_ value: JSONValue?, at: String) throws(RetentionRulesError) -> UUID {
        guard case .string(let text)? = value, let id = UUID(uuidString: text) else {
            throw error("\(at) must be the message's UUID, as uploaded with the Retention Messaging API")
        }
        return id
    }

    /// A product or offer id as App Store Connect allows them: 1–100 letters, digits, `.`, `_`, `-`.
    private static func identifier(_ value: JSONValue?, at: String) throws(RetentionRulesError) -> String {
        guard case .string(let text)? = value, (1...100).contains(text.utf8.count),
            text.utf8.allSatisfy({ isWordByte($0) || $0 == 0x2E })
        else { throw error("\(at) must be 1 to 100 letters, digits, `.`, `_` or `-`") }
        return text
    }

    private static func isName(_ text: String) -> Bool {
        (1...64).contains(text.utf8.count) && text.utf8.allSatisfy(isWordByte)
    }

    private static func isWordByte(_ b: UInt8) -> Bool {
        (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || b == 0x5F || b == 0x2D
    }

    private static func error(_ text: String) -> RetentionRulesError { RetentionRulesError(description: text) }
}
