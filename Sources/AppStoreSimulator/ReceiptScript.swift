import AppStore

/// Builds Apple-shaped answers for a scenario: strings for numbers and flags, as Apple sends them.
struct ReceiptScript {
    let scenario: Scenario
    let tag: String
    let bundleID: String
    let now: Int64

    static let day: Int64 = 86_400_000

    func response(environment: String, receiptData: String) -> JSONValue {
        let d = Self.day
        var inApp: [JSONValue] = []
        var latest: [JSONValue] = []
        var renewals: [JSONValue] = []
        let original = "\(scenarioCode)\(tag)0"
        func id(_ n: Int) -> String { "\(scenarioCode)\(tag)\(n)" }

        switch scenario {
        case .nonConsumable:
            inApp.append(transaction(id: id(1), original: id(1), product: "lifetime", purchased: now - 10 * d, expires: nil))
        case .consumable:
            inApp.append(transaction(id: id(1), original: id(1), product: "coins_100", purchased: now - d, expires: nil))
        case .upgraded:
            let monthly = transaction(
                id: id(1), original: original, product: "monthly", purchased: now - 5 * d, expires: now + 25 * d,
                extra: [
                    "is_upgraded": .string("true"), "cancellation_date_ms": .string(String(now - 2 * d)),
                    "cancellation_reason": .string("0"),
                ])
            let yearly = transaction(
                id: id(2), original: id(2), product: "yearly", purchased: now - 2 * d, expires: now + 363 * d)
            latest = [monthly, yearly]
            inApp = latest
            renewals = [
                renewal(original: original, product: "monthly", autoRenew: false),
                renewal(original: id(2), product: "yearly", autoRenew: true),
            ]
        default:
            let (purchased, expires) = period
            var extra: [String: JSONValue] = [:]
            if scenario == .trial { extra["is_trial_period"] = .string("true") }
            if scenario == .intro { extra["is_in_intro_offer_period"] = .string("true") }
            if scenario == .refunded {
                extra["cancellation_date_ms"] = .string(String(now - d))
                extra["cancellation_reason"] = .string("1")
            }
            let ownership = scenario == .familyShared ? "FAMILY_SHARED" : "PURCHASED"
            let previous = transaction(
                id: id(1), original: original, product: "monthly", purchased: purchased - 30 * d, expires: purchased,
                ownership: ownership)
            let current = transaction(
                id: id(2), original: original, product: "monthly", purchased: purchased, expires: expires, ownership: ownership,
                originalPurchased: purchased - 30 * d, extra: extra)
            latest = [current, previous]  // not chronological, as Apple warns
            inApp = [previous, current]
            renewals = [renewalFor(original: original)]
        }
        var body: [String: JSONValue] = [
            "status": .int(0),
            "environment": .string(environment),
            "receipt": .object([
                "bundle_id": .string(bundleID), "application_version": .string("1.0"), "app_item_id": .int(0),
                "receipt_type": .string(environment == "Sandbox" ? "ProductionSandbox" : "Production"),
                "receipt_creation_date_ms": .string(String(now - 10 * d)), "request_date_ms": .string(String(now)),
                "original_purchase_date_ms": .string(String(now - 100 * d)), "original_application_version": .string("1.0"),
                "in_app": .array(inApp),
            ]),
        ]
        if !latest.isEmpty {
            body["latest_receipt_info"] = .array(latest)
            body["pending_renewal_info"] = .array(renewals)
            body["latest_receipt"] = .string(receiptData)
        }
        return .object(body)
    }

    /// The current period of a subscription scenario: (purchase, expiry).
    private var period: (Int64, Int64) {
        let d = Self.day
        switch scenario {
        case .expiredVoluntary, .expiredBillingError, .expiredPriceIncrease, .expiredNotForSale, .expiredOther:
            return (now - 40 * d, now - 10 * d)
        case .refunded: return (now - 3 * d, now + 27 * d)
        case .gracePeriod: return (now - 31 * d, now - d)
        case .billingRetry: return (now - 35 * d, now - 5 * d)
        case .trial: return (now - 2 * d, now + 5 * d)
        default: return (now - 5 * d, now + 25 * d)
        }
    }

    private func renewalFor(original: String) -> JSONValue {
        let d = Self.day
        var fields: [String: JSONValue] = [:]
        var autoRenew = true
        if let intent = scenario.expirationIntent {
            fields["expiration_intent"] = .string(String(intent))
            autoRenew = scenario == .gracePeriod || scenario == .billingRetry
        }
        switch scenario {
        case .gracePeriod:
            fields["grace_period_expires_date_ms"] = .string(String(now + 2 * d))
            fields["is_in_billing_retry_period"] = .string("1")
        case .billingRetry:
            fields["is_in_billing_retry_period"] = .string("1")
        case .expiredBillingError:
            fields["is_in_billing_retry_period"] = .string("0")
        case .refunded:
            autoRenew = false
        default: break
        }
        return renewal(original: original, product: "monthly", autoRenew: autoRenew, extra: fields)
    }

    private func renewal(original: String, product: String, autoRenew: Bool, extra: [String: JSONValue] = [:])
        -> JSONValue
    {
        var fields: [String: JSONValue] = [
            "original_transaction_id": .string(original), "product_id": .string(product),
            "auto_renew_product_id": .string(product), "auto_renew_status": .string(autoRenew ? "1" : "0"),
        ]
        fields.merge(extra) { _, new in new }
        return .object(fields)
    }

    private func transaction(
        id: String, original: String, product: String, purchased: Int64, expires: Int64?, ownership: String = "PURCHASED",
        originalPurchased: Int64? = nil, extra: [String: JSONValue] = [:]
    ) -> JSONValue {
        var fields: [String: JSONValue] = [
            "transaction_id": .string(id), "original_transaction_id": .string(original), "product_id": .string(product),
            "quantity": .string("1"), "purchase_date_ms": .string(String(purchased)),
            "original_purchase_date_ms": .string(String(originalPurchased ?? purchased)), "is_trial_period": .string("false"),
            "in_app_ownership_type": .string(ownership),
        ]
        if let expires {
            fields["expires_date_ms"] = .string(String(expires))
            fields["subscription_group_identifier"] = .string("20667927")
            fields["is_in_intro_offer_period"] = .string("false")
            fields["web_order_line_item_id"] = .string("9" + id)
        }
        fields.merge(extra) { _, new in new }
        return .object(fields)
    }

    /// A number per scenario, so transaction ids of different scenarios never collide.
    private var scenarioCode: String { String(100 + Scenario.allCases.firstIndex(of: scenario)!) }
}

extension JSONValue {
    /// An integer, as the simulator writes Apple's few JSON numbers.
    static func int(_ n: Int64) -> JSONValue { .number(Double(n), text: String(n)) }
    /// An answer that is only a status.
    static func status(_ code: Int64) -> JSONValue { .object(["status": .int(code)]) }
}
