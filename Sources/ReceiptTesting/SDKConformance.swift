package import JSON

/// RevenueCat's SDKs' decoders, restated: what each would refuse (or silently drop) in an answer,
/// so a test can run every answer of receiptd's RevenueCat listener through both. The rules are
/// ../shared/reference/revenuecat-sdk-protocol.md §3, §5, §7, §8 and its addenda, read from
/// purchases-ios (`CustomerInfoResponse`, `OfferingsResponse`, `ProductEntitlementMappingResponse`,
/// `ErrorResponse`) and purchases-android (`CustomerInfoFactory`, `EntitlementInfoFactories`,
/// `OfferingParser`, `errors.kt`). RevenueCat's own fixtures (Fixtures/RevenueCat) pass it.
///
/// A problem is a sentence naming the member; no problems means the SDK decodes the answer and
/// keeps everything in it.
package enum SDKConformance {
    package enum SDK: String, Sendable, CaseIterable {
        case ios, android
    }

    // MARK: CustomerInfo

    /// Problems `sdk` has with `json` as a CustomerInfo.
    package static func customerInfo(_ json: JSONValue, sdk: SDK) -> [String] {
        var problems: [String] = []
        func problem(_ text: String) { problems.append("\(sdk.rawValue): \(text)") }
        if !isDate(json["request_date"]) { problem("request_date must be an ISO 8601 date") }
        guard case .object? = json["subscriber"], let subscriber = json["subscriber"] else {
            problem("subscriber is required")
            return problems
        }
        if case .string? = subscriber["original_app_user_id"] {
        } else if sdk == .ios {
            problem("subscriber.original_app_user_id must be a string")
        }
        if !isDate(subscriber["first_seen"]) { problem("subscriber.first_seen must be a date") }
        for key in ["original_purchase_date"] where !isDate(subscriber[key], orNull: true) {
            problem("subscriber.\(key) must be a date or null")
        }
        if let version = subscriber["original_application_version"], version != .null, str(version) == nil {
            problem("subscriber.original_application_version must be a string or null")
        }
        var products: [String: (store: Bool, original: Bool, sandbox: Bool)] = [:]
        for group in ["subscriptions", "non_subscriptions"] {
            switch subscriber[group] {
            case .object?: break
            case nil where sdk == .ios: continue
            default:
                problem("subscriber.\(group) must be an object")
                continue
            }
        }
        if case .object(let subscriptions)? = subscriber["subscriptions"] {
            for (id, s) in subscriptions {
                let at = "subscriptions.\(id.string)"
                guard case .object = s else {
                    problem("\(at) must be an object")
                    continue
                }
                if !isDate(s["purchase_date"]) { problem("\(at).purchase_date must be a date") }
                for key in [
                    "original_purchase_date", "expires_date", "unsubscribe_detected_at", "billing_issues_detected_at",
                    "grace_period_expires_date", "refunded_at", "auto_resume_date",
                ] where !isDate(s[key], orNull: true, absentOK: true) {
                    problem("\(at).\(key) must be a date or null")
                }
                if let sandbox = s["is_sandbox"], !isBool(sandbox) { problem("\(at).is_sandbox must be a boolean") }
                if sdk == .android {
                    for key in ["store", "period_type"] where str(s[key]) == nil { problem("\(at).\(key) is required") }
                    if s["is_sandbox"] == nil { problem("\(at).is_sandbox is required") }
                }
                for key in ["product_plan_identifier", "store_transaction_id", "display_name"] where s[key] == .null {
                    // Android reads JSON null as the text "null" (optString).
                    if sdk == .android { problem("\(at).\(key) is null: leave it out") }
                }
                problems += price(s["price"], at: at).map { "\(sdk.rawValue): \($0)" }
                if let url = s["management_url"], url != .null, !isURL(str(url)) {
                    if sdk == .ios { problem("\(at).management_url must be a URL") }
                }
                products[id.string] = (
                    str(s["store"]) != nil, isDate(s["original_purchase_date"]), isBool(s["is_sandbox"] ?? .null)
                )
            }
        }
        if case .object(let nonSubscriptions)? = subscriber["non_subscriptions"] {
            for (id, list) in nonSubscriptions {
                let at = "non_subscriptions.\(id.string)"
                guard case .array(let purchases) = list else {
                    problem("\(at) must be an array")
                    continue
                }
                for (i, p) in purchases.enumerated() {
                    let pat = "\(at)[\(i)]"
                    if !isDate(p["purchase_date"]) { problem("\(pat).purchase_date must be a date") }
                    if sdk == .ios, !isBool(p["is_sandbox"] ?? .null) { problem("\(pat).is_sandbox must be a boolean") }
                    if sdk == .android {
                        for key in ["id", "store"] where str(p[key]) == nil { problem("\(pat).\(key) is required") }
                    }
                    if !isDate(p["original_purchase_date"], orNull: true, absentOK: true) {
                        problem("\(pat).original_purchase_date must be a date or null")
                    }
                    problems += price(p["price"], at: pat).map { "\(sdk.rawValue): \($0)" }
                }
                if let last = purchases.last {
                    products[id.string] = (
                        str(last["store"]) != nil, isDate(last["original_purchase_date"]), isBool(last["is_sandbox"] ?? .null)
                    )
                }
            }
        }
        switch subscriber["entitlements"] {
        case .object(let entitlements)?:
            for (name, e) in entitlements {
                let at = "entitlements.\(name.string)"
                guard let product = str(e["product_identifier"]), !product.isEmpty else {
                    problem("\(at).product_identifier is required")
                    continue
                }
                if !isDate(e["expires_date"], orNull: true, absentOK: true) {
                    problem("\(at).expires_date must be a date or null")
                }
                if sdk == .android, !isDate(e["purchase_date"]) { problem("\(at).purchase_date must be a date") }
                if sdk == .ios, !isDate(e["purchase_date"], orNull: true, absentOK: true) {
                    problem("\(at).purchase_date must be a date or null")
                }
                guard let named = products[product] else {
                    problem("\(at) names \(product), which is in neither subscriptions nor non_subscriptions: dropped")
                    continue
                }
                if sdk == .android, !(named.store && named.original && named.sandbox) {
                    problem(
                        "\(at): its product needs store, original_purchase_date and is_sandbox (Android fails the whole parse)")
                }
            }
        case nil, .null?: break
        default: problem("subscriber.entitlements must be an object")
        }
        return problems
    }

    /// A price: absent, or `{"amount": <number>, "currency": <string>}` (iOS fails the whole
    /// CustomerInfo on a string amount).
    private static func price(_ value: JSONValue?, at: String) -> [String] {
        guard let value, value != .null else { return [] }
        guard case .number? = value["amount"], case .string? = value["currency"] else {
            return ["\(at).price must be {\"amount\": number, \"currency\": string}"]
        }
        return []
    }

    // MARK: Offerings

    /// Problems `sdk` has with `json` as the answer to `GET /v1/subscribers/{id}/offerings`.
    package static func offerings(_ json: JSONValue, sdk: SDK) -> [String] {
        var problems: [String] = []
        func problem(_ text: String) { problems.append("\(sdk.rawValue): \(text)") }
        switch json["current_offering_id"] {
        case .string?, .null?: break
        case nil: if sdk == .android { problem("current_offering_id is required") }
        default: problem("current_offering_id must be a string or null")
        }
        guard case .array(let offerings)? = json["offerings"] else {
            problem("offerings must be an array")
            return problems
        }
        for (i, o) in offerings.enumerated() {
            let at = "offerings[\(i)]"
            if str(o["identifier"]) == nil { problem("\(at).identifier is required") }
            guard case .array(let packages)? = o["packages"] else {
                problem("\(at).packages must be an array")
                continue
            }
            if str(o["description"]) == nil, sdk == .ios || !packages.isEmpty { problem("\(at).description is required") }
            if let metadata = o["metadata"], metadata != .null, case .object = metadata {
            } else if o["metadata"] != nil,
                o["metadata"] != .null
            {
                problem("\(at).metadata must be an object or null")
            }
            if o["paywall_components"] != nil { problem("\(at).paywall_components must be left out") }
            for (j, p) in packages.enumerated() {
                let pat = "\(at).packages[\(j)]"
                for key in ["identifier", "platform_product_identifier"] where str(p[key]) == nil {
                    problem("\(pat).\(key) is required")
                }
                if let plan = p["platform_product_plan_identifier"] {
                    guard let text = str(plan) else {
                        problem("\(pat).platform_product_plan_identifier must be a string when present")
                        continue
                    }
                    if sdk == .ios, !["upFront", "monthly"].contains(text), !text.isEmpty {
                        // purchases-ios 5.76.0 on reads another plan id as an App Store billing plan.
                        problem("\(pat).platform_product_plan_identifier \(text) would be read as an App Store billing plan")
                    }
                }
            }
        }
        if let targeting = json["targeting"], targeting != .null {
            if targeting["revision"]?.int64 == nil || str(targeting["rule_id"]) == nil {
                problem("targeting needs revision and rule_id")
            }
        }
        return problems
    }

    /// Problems either SDK has with `json` as `GET /v1/product_entitlement_mapping`.
    package static func entitlementMapping(_ json: JSONValue) -> [String] {
        guard case .object(let mapping)? = json["product_entitlement_mapping"] else {
            return ["product_entitlement_mapping must be an object"]
        }
        var problems: [String] = []
        for (key, entry) in mapping {
            if str(entry["product_identifier"]) == nil { problems.append("\(key.string).product_identifier is required") }
            guard case .array(let entitlements)? = entry["entitlements"], entitlements.allSatisfy({ str($0) != nil }) else {
                problems.append("\(key.string).entitlements must be an array of strings")
                continue
            }
            if let plan = entry["base_plan_id"], str(plan) == nil {
                problems.append("\(key.string).base_plan_id must be a string")
            }
        }
        return problems
    }

    // MARK: Errors

    /// Problems the SDKs have reading `body` as an error with its code (iOS reads an error body
    /// only when `contentType` is JSON).
    package static func error(_ body: JSONValue, contentType: String?) -> [String] {
        var problems: [String] = []
        if contentType?.hasPrefix("application/json") != true { problems.append("an error's Content-Type must be JSON") }
        let code = body["code"]?.int64 ?? str(body["code"]).flatMap { Int64($0) }
        if (code ?? 0) <= 0 { problems.append("code must be a positive integer") }
        if str(body["message"]) == nil { problems.append("message must be a string") }
        return problems
    }

    // MARK: Values

    /// ISO 8601 with `Z`, and 0 or 3 fractional digits: what both SDKs parse
    /// (`2026-01-01T00:00:00Z`, `2026-01-01T00:00:00.123Z`).
    static func isDate(_ value: JSONValue?, orNull: Bool = false, absentOK: Bool = false) -> Bool {
        guard let value else { return absentOK }
        if value == .null { return orNull }
        guard let text = str(value) else { return false }
        let bytes = Array(text.utf8)
        guard bytes.count == 20 || bytes.count == 24, bytes.last == UInt8(ascii: "Z") else { return false }
        let pattern = Array((bytes.count == 20 ? "dddd-dd-ddTdd:dd:ddZ" : "dddd-dd-ddTdd:dd:dd.dddZ").utf8)
        return zip(bytes, pattern).allSatisfy { b, p in
            p == UInt8(ascii: "d") ? (b >= UInt8(ascii: "0") && b <= UInt8(ascii: "9")) : b == p
        }
    }

    /// A JSON string's text (not a number's digits, as `JSONValue.string` reads them).
    private static func str(_ value: JSONValue?) -> String? { if case .string(let s)? = value { s } else { nil } }

    private static func isBool(_ value: JSONValue) -> Bool { if case .bool = value { true } else { false } }

    private static func isURL(_ text: String?) -> Bool {
        guard let text else { return false }
        return (text.hasPrefix("https://") || text.hasPrefix("http://")) && !text.contains(" ")
    }
}
