import AppStore
import Crypto
import JSON

/// Builds Apple-shaped answers for a scenario: strings for numbers and flags, as Apple sends them.
struct ReceiptScript {
    let scenario: Scenario
    let tag: String
    let bundleID: String
    /// When the receipt was first seen: the scenario's dates are relative to it.
    let now: Int64
    /// The simulator's clock at this answer (scenarios that move with time).
    var asOf: Int64? = nil

    static let day: Int64 = 86_400_000
    /// Where a script keeps what only the App Store Server API states (a commitment's terms):
    /// ``ServerAPIScript`` maps it, verifyReceipt's answers leave it out (``verifyReceiptAnswer(_:)``).
    static let commitmentKey: Identifier = "simulator_commitment"

    /// `body` as verifyReceipt answers it: without what only the Server API states.
    static func verifyReceiptAnswer(_ body: JSONValue) -> JSONValue {
        guard case .object(var fields) = body else { return body }
        func strip(_ list: JSONValue?) -> JSONValue? {
            guard case .array(let items)? = list else { return list }
            return .array(
                items.map { item in
                    guard case .object(var o) = item else { return item }
                    o[commitmentKey] = nil
                    return .object(o)
                })
        }
        for key: Identifier in ["latest_receipt_info", "pending_renewal_info"] where fields[key] != nil {
            fields[key] = strip(fields[key])
        }
        if case .object(var receipt)? = fields["receipt"] {
            receipt["in_app"] = strip(receipt["in_app"])
            fields["receipt"] = .object(receipt)
        }
        return .object(fields)
    }

    func response(environment: String, receiptData: String) -> JSONValue {
        let d = Self.day
        var inApp: [JSONValue] = []
        var latest: [JSONValue] = []
        var renewals: [JSONValue] = []
        // Apple's transaction ids are decimal digits, and receiptd refuses any other: the scenario's
        // code, the tag as 20 digits (the first 8 bytes of its SHA-256) and `n` in 3, one id per
        // (scenario, tag, n) whatever the tag's text.
        let prefix =
            scenarioCode
            + Self.decimal(SHA256.hash(data: Array(tag.utf8)).prefix(8).reduce(0) { $0 << 8 | UInt64($1) }, width: 20)
        func id(_ n: Int) -> String { prefix + Self.decimal(UInt64(n), width: 3) }
        let original = id(0)

        switch scenario {
        case .nonConsumable:
            inApp.append(transaction(id: id(1), original: id(1), product: "lifetime", purchased: now - 10 * d, expires: nil))
        case .consumable:
            inApp.append(transaction(id: id(1), original: id(1), product: "coins_100", purchased: now - d, expires: nil))
        case .nonRenewing:
            inApp.append(transaction(id: id(1), original: id(1), product: "pass_30d", purchased: now - 3 * d, expires: nil))
        case .upgraded:
            // An upgrade keeps the original transaction id; the superseded period is marked and cancelled.
            let monthly = transaction(
                id: id(1), original: original, product: "monthly", purchased: now - 5 * d, expires: now + 25 * d,
                extra: [
                    "is_upgraded": .string("true"), "cancellation_date_ms": .string(String(now - 2 * d)),
                    "cancellation_reason": .string("0"),
                ])
            let premium = transaction(
                id: id(2), original: original, product: "premium_monthly", purchased: now - 2 * d, expires: now + 28 * d,
                originalPurchased: now - 5 * d)
            latest = [monthly, premium]
            inApp = latest
            renewals = [renewal(original: original, product: "premium_monthly", autoRenew: true)]
        case .downgradePending:
            let yearly = transaction(
                id: id(1), original: original, product: "yearly", purchased: now - 100 * d, expires: now + 265 * d)
            latest = [yearly]
            inApp = latest
            renewals = [
                renewal(
                    original: original, product: "yearly", autoRenew: true, extra: ["auto_renew_product_id": .string("monthly")])
            ]
        case .renewing:
            let start = now - 5 * d
            let periods = max(1, Int(((asOf ?? now) - start) / (30 * d)) + 1)
            inApp = (0..<periods).map { k in
                transaction(
                    id: id(k + 1), original: original, product: "monthly", purchased: start + Int64(k) * 30 * d,
                    expires: start + Int64(k + 1) * 30 * d, originalPurchased: start)
            }
            latest = inApp.reversed()
            renewals = [renewal(original: original, product: "monthly", autoRenew: true)]
        case .longHistory:
            let (periods, week) = (1000, 7 * d)
            let start = now - Int64(periods - 1) * week - d
            inApp = (0..<periods).map { k in
                transaction(
                    id: id(k + 1), original: original, product: "weekly", purchased: start + Int64(k) * week,
                    expires: start + Int64(k + 1) * week, originalPurchased: start)
            }
            latest = inApp.reversed()
            renewals = [renewal(original: original, product: "weekly", autoRenew: true)]
        case .commitment:
            // Month k (from 0) of 14: commitments of 12 months each, at 119.880 a commitment.
            let start = now - 13 * 30 * d - 5 * d
            inApp = (0..<14).map { k in
                let commitmentStart = start + Int64(k / 12 * 12) * 30 * d
                return transaction(
                    id: id(k + 1), original: original, product: "monthly", purchased: start + Int64(k) * 30 * d,
                    expires: start + Int64(k + 1) * 30 * d, originalPurchased: start,
                    extra: [
                        Self.commitmentKey: .object([
                            "billingPeriodNumber": .int(Int64(k % 12 + 1)), "totalBillingPeriods": .int(12),
                            "commitmentExpiresDate": .int(commitmentStart + 12 * 30 * d), "commitmentPrice": .int(119_880),
                        ])
                    ])
            }
            latest = inApp.reversed()
            renewals = [
                renewal(
                    original: original, product: "monthly", autoRenew: true,
                    extra: [
                        Self.commitmentKey: .object([
                            "commitmentAutoRenewStatus": .int(0), "commitmentAutoRenewProductId": .string("monthly"),
                            "commitmentRenewalDate": .int(start + 24 * 30 * d), "commitmentRenewalPrice": .int(119_880),
                            "commitmentRenewalBillingPlanType": .string("MONTHLY"),
                        ])
                    ])
            ]
        case .billingRetryRecovers where (asOf ?? now) >= now + 2 * d:
            let lapsed = transaction(
                id: id(1), original: original, product: "monthly", purchased: now - 35 * d, expires: now - 5 * d)
            let recovered = transaction(
                id: id(2), original: original, product: "monthly", purchased: now + 2 * d, expires: now + 32 * d,
                originalPurchased: now - 35 * d)
            inApp = [lapsed, recovered]
            latest = [recovered, lapsed]
            renewals = [renewal(original: original, product: "monthly", autoRenew: true)]
        default:
            let (purchased, expires) = period
            var extra: [Identifier: JSONValue] = [:]
            if scenario == .trial { extra["is_trial_period"] = .string("true") }
            if scenario == .intro { extra["is_in_intro_offer_period"] = .string("true") }
            if scenario == .refunded || scenario == .familyRevoked {
                extra["cancellation_date_ms"] = .string(String(now - d))
                extra["cancellation_reason"] = .string(scenario == .refunded ? "1" : "0")
            }
            if scenario == .offerCode { extra["offer_code_ref_name"] = .string("SPRING2026") }
            if scenario == .promotionalOffer { extra["promotional_offer_id"] = .string("winback_50") }
            let ownership = scenario == .familyShared || scenario == .familyRevoked ? "FAMILY_SHARED" : "PURCHASED"
            var previousExtra: [Identifier: JSONValue] = [:]
            if scenario == .pastRefund {
                previousExtra["cancellation_date_ms"] = .string(String(purchased - 2 * d))
                previousExtra["cancellation_reason"] = .string("0")
            }
            let previous = transaction(
                id: id(1), original: original, product: "monthly", purchased: purchased - 30 * d, expires: purchased,
                ownership: ownership, extra: previousExtra)
            let current = transaction(
                id: id(2), original: original, product: "monthly", purchased: purchased, expires: expires, ownership: ownership,
                originalPurchased: scenario == .trial || scenario == .intro ? purchased : purchased - 30 * d, extra: extra)
            if scenario == .trial || scenario == .intro {
                // An offer period is the subscription's first.
                latest = [current]
                inApp = [current]
            } else {
                latest = [current, previous]  // not chronological, as Apple warns
                inApp = [previous, current]
            }
            renewals = [renewalFor(original: original)]
        }
        var body: [Identifier: JSONValue] = [
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
        case .refunded, .familyRevoked: return (now - 3 * d, now + 27 * d)
        case .gracePeriod: return (now - 31 * d, now - d)
        case .billingRetry, .billingRetryRecovers: return (now - 35 * d, now - 5 * d)
        case .trial: return (now - 2 * d, now + 5 * d)
        default: return (now - 5 * d, now + 25 * d)
        }
    }

    private func renewalFor(original: String) -> JSONValue {
        let d = Self.day
        var fields: [Identifier: JSONValue] = [:]
        var autoRenew = true
        if let intent = scenario.expirationIntent {
            fields["expiration_intent"] = .string(String(intent))
            autoRenew = scenario == .gracePeriod || scenario == .billingRetry || scenario == .billingRetryRecovers
        }
        switch scenario {
        case .gracePeriod:
            fields["grace_period_expires_date_ms"] = .string(String(now + 2 * d))
            fields["is_in_billing_retry_period"] = .string("1")
        case .billingRetry, .billingRetryRecovers:
            fields["is_in_billing_retry_period"] = .string("1")
        case .expiredBillingError:
            fields["is_in_billing_retry_period"] = .string("0")
        case .refunded, .cancelled, .familyRevoked:
            autoRenew = false
        case .priceIncreasePending:
            fields["price_consent_status"] = .string("0")
            fields["price_increase_status"] = .string("0")
        default: break
        }
        return renewal(original: original, product: "monthly", autoRenew: autoRenew, extra: fields)
    }

    private func renewal(original: String, product: String, autoRenew: Bool, extra: [Identifier: JSONValue] = [:])
        -> JSONValue
    {
        var fields: [Identifier: JSONValue] = [
            "original_transaction_id": .string(original), "product_id": .string(product),
            "auto_renew_product_id": .string(product), "auto_renew_status": .string(autoRenew ? "1" : "0"),
        ]
        fields.merge(extra) { _, new in new }
        return .object(fields)
    }

    private func transaction(
        id: String, original: String, product: String, purchased: Int64, expires: Int64?, ownership: String = "PURCHASED",
        originalPurchased: Int64? = nil, extra: [Identifier: JSONValue] = [:]
    ) -> JSONValue {
        var fields: [Identifier: JSONValue] = [
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

    /// `value` in decimal, zero-padded to `width` digits.
    private static func decimal(_ value: UInt64, width: Int) -> String {
        let digits = String(value)
        return String(repeating: "0", count: max(0, width - digits.count)) + digits
    }
}

extension JSONValue {
    /// An answer that is only a status.
    static func status(_ code: Int64) -> JSONValue { .object(["status": .int(code)]) }
}
