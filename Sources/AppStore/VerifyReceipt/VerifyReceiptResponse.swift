package import Entitlements
package import JSON

/// A `verifyReceipt` answer, read tolerantly (Docs/apple-protocols.md §1.4–1.7): every field optional,
/// strings or numbers accepted, unknown fields kept in `raw`.
package struct VerifyReceiptResponse: Sendable, Equatable {
    package var status: AppleStatus
    package var environment: StoreEnvironment?
    /// `is_retryable` or `is-retryable`, `true`/`1` (§1.3: both spellings are seen).
    package var isRetryable: Bool
    package var receipt: Receipt?
    /// Every transaction of `receipt.in_app` and `latest_receipt_info`, one per `transaction_id`
    /// (the `latest_receipt_info` copy wins: it carries the most fields).
    package var transactions: [Transaction]
    package var pendingRenewalInfo: [PendingRenewalInfo]
    /// The newest app receipt (base64), for later re-validation.
    package var latestReceipt: String?
    package var raw: JSONValue

    /// Why an answer could not be read at all.
    package struct Malformed: Error, Equatable, CustomStringConvertible {
        package let reason: String
        /// Set when a date was outside ``AppleDate/range``: the answer is JSON, but not usable.
        package let outOfRange: AppleDate.OutOfRange?
        package init(reason: String, outOfRange: AppleDate.OutOfRange? = nil) {
            self.reason = reason
            self.outOfRange = outOfRange
        }
        package var description: String { "verifyReceipt answer: \(reason)" }
    }

    package init(json bytes: [UInt8]) throws(Malformed) {
        let raw: JSONValue
        do {
            raw = try JSONValue.parse(bytes)
        } catch {
            throw Malformed(reason: "not JSON")
        }
        try self.init(raw)
    }

    /// An answer already parsed (a V1 notification's `unified_receipt`).
    package init(_ raw: JSONValue) throws(Malformed) {
        guard case .object = raw else { throw Malformed(reason: "not a JSON object") }
        guard let status = raw["status"]?.int64, let code = Int(exactly: status) else {
            throw Malformed(reason: "no status")
        }
        self.raw = raw
        self.status = AppleStatus(rawValue: code)
        environment = raw["environment"]?.string.flatMap(StoreEnvironment.init(appleName:))
        isRetryable = (raw["is_retryable"]?.bool ?? raw["is-retryable"]?.bool) == true
        latestReceipt = raw["latest_receipt"]?.string
        do throws(AppleDate.OutOfRange) {
            if let decoded = raw["receipt"] { receipt = try Receipt(decoded) } else { receipt = nil }
            var byID: [Identifier: Transaction] = [:]
            var order: [Identifier] = []
            let inApp = raw["receipt"]?["in_app"]?.array ?? []
            let latest = raw["latest_receipt_info"]?.array ?? []
            for item in inApp + latest {
                guard let t = try Transaction(item) else { continue }
                let id = Identifier(t.transactionID)
                if byID[id] == nil { order.append(id) }
                byID[id] = t
            }
            transactions = order.map { byID[$0]! }
            var renewals: [PendingRenewalInfo] = []
            for item in raw["pending_renewal_info"]?.array ?? [] {
                if let info = try PendingRenewalInfo(item) { renewals.append(info) }
            }
            pendingRenewalInfo = renewals
        } catch {
            throw Malformed(reason: error.description, outOfRange: error)
        }
    }
}

/// The decoded app receipt (§1.5).
package struct Receipt: Sendable, Equatable {
    package var bundleID: String
    package var applicationVersion: String?
    package var originalApplicationVersion: String?
    package var receiptType: String?
    package var appItemID: Int64?
    package var creationDateMs: Int64?
    package var requestDateMs: Int64?
    package var originalPurchaseDateMs: Int64?
    package var expirationDateMs: Int64?

    package init?(_ v: JSONValue) throws(AppleDate.OutOfRange) {
        guard let bundleID = v["bundle_id"]?.string else { return nil }
        self.bundleID = bundleID
        applicationVersion = v["application_version"]?.string
        originalApplicationVersion = v["original_application_version"]?.string
        receiptType = v["receipt_type"]?.string
        appItemID = v["app_item_id"]?.int64
        creationDateMs = try v.date("receipt_creation_date_ms")
        requestDateMs = try v.date("request_date_ms")
        originalPurchaseDateMs = try v.date("original_purchase_date_ms")
        expirationDateMs = try v.date("expiration_date_ms")
    }
}

/// One purchase, renewal or restore (§1.6). Dates are epoch milliseconds.
package struct Transaction: Sendable, Equatable {
    package var transactionID: String
    package var originalTransactionID: String
    package var productID: String
    package var purchaseDateMs: Int64?
    package var originalPurchaseDateMs: Int64?
    package var expiresDateMs: Int64?
    package var cancellationDateMs: Int64?
    /// `"1"`: a problem with the app; `"0"`: another reason.
    package var cancellationReason: String?
    package var quantity: Int64?
    package var isTrialPeriod: Bool
    package var isInIntroOfferPeriod: Bool
    package var isUpgraded: Bool
    /// `PURCHASED` or `FAMILY_SHARED`.
    package var ownershipType: String?
    package var subscriptionGroupID: String?
    package var webOrderLineItemID: String?
    package var promotionalOfferID: String?
    package var offerCodeRefName: String?
    package var appAccountToken: String?
    /// The transaction object as Apple sent it.
    package var raw: JSONValue

    package init?(_ v: JSONValue) throws(AppleDate.OutOfRange) {
        guard let id = v["transaction_id"]?.string, let product = v["product_id"]?.string else { return nil }
        transactionID = id
        originalTransactionID = v["original_transaction_id"]?.string ?? id
        productID = product
        purchaseDateMs = try v.date("purchase_date_ms")
        originalPurchaseDateMs = try v.date("original_purchase_date_ms")
        expiresDateMs = try v.date("expires_date_ms")
        cancellationDateMs = try v.date("cancellation_date_ms")
        cancellationReason = v["cancellation_reason"]?.string
        quantity = v["quantity"]?.int64
        isTrialPeriod = v["is_trial_period"]?.bool ?? false
        isInIntroOfferPeriod = v["is_in_intro_offer_period"]?.bool ?? false
        isUpgraded = v["is_upgraded"]?.bool ?? false
        ownershipType = v["in_app_ownership_type"]?.string
        subscriptionGroupID = v["subscription_group_identifier"]?.string
        webOrderLineItemID = v["web_order_line_item_id"]?.string
        promotionalOfferID = v["promotional_offer_id"]?.string
        offerCodeRefName = v["offer_code_ref_name"]?.string
        appAccountToken = v["app_account_token"]?.string
        raw = v
    }
}

/// What Apple will do at the next renewal of one subscription (§1.7).
package struct PendingRenewalInfo: Sendable, Equatable {
    package var originalTransactionID: String
    package var productID: String?
    package var autoRenewProductID: String?
    package var autoRenewStatus: Bool?
    /// 1 voluntary, 2 billing error, 3 price increase refused, 4 not for sale, 5 other.
    package var expirationIntent: Int64?
    package var gracePeriodExpiresDateMs: Int64?
    package var isInBillingRetryPeriod: Bool?
    package var priceConsentStatus: String?
    package var priceIncreaseStatus: String?
    package var offerCodeRefName: String?
    package var promotionalOfferID: String?
    package var raw: JSONValue

    package init?(_ v: JSONValue) throws(AppleDate.OutOfRange) {
        guard let original = v["original_transaction_id"]?.string else { return nil }
        originalTransactionID = original
        productID = v["product_id"]?.string
        autoRenewProductID = v["auto_renew_product_id"]?.string
        autoRenewStatus = v["auto_renew_status"]?.bool
        expirationIntent = v["expiration_intent"]?.int64
        gracePeriodExpiresDateMs = try v.date("grace_period_expires_date_ms")
        isInBillingRetryPeriod = v["is_in_billing_retry_period"]?.bool
        priceConsentStatus = v["price_consent_status"]?.string
        priceIncreaseStatus = v["price_increase_status"]?.string
        offerCodeRefName = v["offer_code_ref_name"]?.string
        promotionalOfferID = v["promotional_offer_id"]?.string
        raw = v
    }
}
