import JSON

/// A scripted receipt's purchases as the App Store Server API tells them: each verifyReceipt
/// transaction (§1.6) as a `JWSTransactionDecodedPayload` (§3.5) and each pending renewal (§1.7)
/// as a `JWSRenewalInfoDecodedPayload` (§3.6), so both of the simulator's APIs tell one story and
/// shadow mode can compare them.
struct ServerAPIScript {
    /// The verifyReceipt answer the scenario gives (status 0).
    let receipt: JSONValue
    let bundleID: String
    /// `Production` or `Sandbox`.
    let environment: String
    let signedDate: Int64

    /// Every transaction, oldest purchase first, as signed-transaction payloads.
    var transactions: [JSONValue] {
        var seen: Set<String> = []
        let all = (receipt["latest_receipt_info"]?.array ?? []) + (receipt["receipt"]?["in_app"]?.array ?? [])
        return all.filter { seen.insert($0["transaction_id"]?.string ?? "").inserted }
            .sorted {
                ($0["purchase_date_ms"]?.int64 ?? 0, $0["transaction_id"]?.string ?? "") < (
                    $1["purchase_date_ms"]?.int64 ?? 0, $1["transaction_id"]?.string ?? ""
                )
            }
            .map { [app = appTransactionID] in transaction($0, appTransactionID: app) }
    }

    /// The customer's `appTransactionId`, on each of their signed transactions: "7" and their first
    /// purchase's original transaction id, as the simulator's Get App Transaction Info answers.
    var appTransactionID: String? {
        let all = (receipt["latest_receipt_info"]?.array ?? []) + (receipt["receipt"]?["in_app"]?.array ?? [])
        let first = all.min {
            ($0["purchase_date_ms"]?.int64 ?? 0, $0["transaction_id"]?.string ?? "") < (
                $1["purchase_date_ms"]?.int64 ?? 0, $1["transaction_id"]?.string ?? ""
            )
        }
        return first?["original_transaction_id"]?.string.map { "7" + $0 }
    }

    /// Each subscription's pending renewal as a renewal-info payload.
    var renewals: [JSONValue] { (receipt["pending_renewal_info"]?.array ?? []).map(renewal) }

    /// One transaction's payload; `appTransactionID` is the customer's (computed once by the caller).
    func transaction(_ t: JSONValue, appTransactionID: String?) -> JSONValue {
        var o: [Identifier: JSONValue] = [
            "bundleId": .string(bundleID), "environment": .string(environment), "signedDate": .int(signedDate),
            "storefront": .string("USA"), "storefrontId": .string("143441"), "currency": .string("USD"), "price": .int(4_990),
            "transactionReason": .string("PURCHASE"),
        ]
        let copies: [(Identifier, Identifier)] = [
            ("transaction_id", "transactionId"), ("original_transaction_id", "originalTransactionId"),
            ("product_id", "productId"), ("web_order_line_item_id", "webOrderLineItemId"),
            ("subscription_group_identifier", "subscriptionGroupIdentifier"), ("in_app_ownership_type", "inAppOwnershipType"),
            ("app_account_token", "appAccountToken"),
        ]
        for (from, to) in copies { if let v = t[from.string]?.string { o[to] = .string(v) } }
        let dates: [(Identifier, Identifier)] = [
            ("purchase_date_ms", "purchaseDate"), ("original_purchase_date_ms", "originalPurchaseDate"),
            ("expires_date_ms", "expiresDate"), ("cancellation_date_ms", "revocationDate"),
        ]
        for (from, to) in dates { if let v = t[from.string]?.int64 { o[to] = .int(v) } }
        o["quantity"] = .int(t["quantity"]?.int64 ?? 1)
        if let app = appTransactionID { o["appTransactionId"] = .string(app) }
        if let commitment = t[ReceiptScript.commitmentKey.string] {
            o["billingPlanType"] = .string("MONTHLY")
            o["commitmentInfo"] = commitment
        }
        if let reason = t["cancellation_reason"]?.int64 { o["revocationReason"] = .int(reason) }
        o["isUpgraded"] = .bool(t["is_upgraded"]?.string == "true")
        o["type"] = .string(Self.type(product: t["product_id"]?.string ?? "", subscription: t["expires_date_ms"] != nil))
        if t["is_trial_period"]?.string == "true" {
            o["price"] = .int(0)  // a free trial's transaction states a price of zero
            o["offerType"] = .int(1)
            o["offerDiscountType"] = .string("FREE_TRIAL")
        } else if t["is_in_intro_offer_period"]?.string == "true" {
            o["offerType"] = .int(1)
            o["offerDiscountType"] = .string("PAY_AS_YOU_GO")
        } else if let promo = t["promotional_offer_id"]?.string {
            o["offerType"] = .int(2)
            o["offerIdentifier"] = .string(promo)
        } else if let code = t["offer_code_ref_name"]?.string {
            o["offerType"] = .int(3)
            o["offerIdentifier"] = .string(code)
        }
        return .object(o)
    }

    func renewal(_ r: JSONValue) -> JSONValue {
        var o: [Identifier: JSONValue] = ["environment": .string(environment), "signedDate": .int(signedDate)]
        for (from, to) in [
            ("original_transaction_id", "originalTransactionId"), ("product_id", "productId"),
            ("auto_renew_product_id", "autoRenewProductId"),
        ] as [(String, Identifier)] {
            if let v = r[from]?.string { o[to] = .string(v) }
        }
        o["autoRenewStatus"] = .int(r["auto_renew_status"]?.int64 ?? 0)
        if let v = r["expiration_intent"]?.int64 { o["expirationIntent"] = .int(v) }
        if let v = r["grace_period_expires_date_ms"]?.int64 { o["gracePeriodExpiresDate"] = .int(v) }
        if let v = r["is_in_billing_retry_period"]?.int64 { o["isInBillingRetryPeriod"] = .bool(v == 1) }
        if let v = r["price_increase_status"]?.int64 { o["priceIncreaseStatus"] = .int(v) }
        if let commitment = r[ReceiptScript.commitmentKey.string] {
            o["renewalBillingPlanType"] = .string("MONTHLY")
            o["commitmentInfo"] = commitment
        }
        return .object(o)
    }

    /// §3.5 `type` for the simulator's products.
    static func type(product: String, subscription: Bool) -> String {
        if subscription { return "Auto-Renewable Subscription" }
        switch product {
        case "coins_100": return "Consumable"
        case "pass_30d": return "Non-Renewing Subscription"
        default: return "Non-Consumable"
        }
    }

    /// Get All Subscription Statuses' `status` for one subscription at `now` (§3.8): 5 revoked,
    /// 1 active, 4 in grace, 3 in billing retry, else 2 expired.
    static func status(last: JSONValue, renewal: JSONValue?, now: Int64) -> Int64 {
        if last["revocationDate"] != nil { return 5 }
        if let expires = last["expiresDate"]?.int64, expires > now { return 1 }
        if let grace = renewal?["gracePeriodExpiresDate"]?.int64, grace > now { return 4 }
        if renewal?["isInBillingRetryPeriod"]?.bool == true { return 3 }
        return 2
    }
}
