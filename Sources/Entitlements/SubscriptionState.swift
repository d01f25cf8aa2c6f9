/// The state of one auto-renewable subscription at a moment (Docs/apple-protocols.md §1.8, and
/// Google Play's `subscriptionState`, Docs/google-play.md).
package enum SubscriptionState: String, Sendable, Equatable, CaseIterable {
    /// The current period has not expired and was not refunded.
    case active
    /// Expired, but within Apple's billing grace period: entitled until it ends.
    case gracePeriod = "grace_period"
    /// Expired; Apple is still trying to bill (up to 60 days). Entitled only by policy.
    case billingRetry = "billing_retry"
    case expired
    /// The current period was refunded (`cancellation_date`).
    case refunded
    /// The current period of a family-shared purchase was revoked.
    case revoked
    /// Superseded by another product of the same subscription group (an upgrade or crossgrade):
    /// the entitlement comes from the product that replaced it.
    case upgraded
    /// Google Play: the payment failed and any grace period ended; Google holds the subscription
    /// while it retries, and access stops until the customer fixes the payment.
    case accountHold = "account_hold"
    /// Google Play: the customer paused the subscription; no access until it resumes.
    case paused
    /// Google Play: bought, but the payment has not completed; no access yet.
    case pending
}

/// Why a subscription ended (`expiration_intent`, §1.7), or `refunded`.
package enum ExpirationReason: String, Sendable, Equatable {
    case customerCancelled = "customer_cancelled"
    case billingError = "billing_error"
    case priceIncreaseDeclined = "price_increase_declined"
    case productUnavailable = "product_unavailable"
    case other
    case refunded
    case unknown

    init(intent: Int64?) {
        switch intent {
        case 1: self = .customerCancelled
        case 2: self = .billingError
        case 3: self = .priceIncreaseDeclined
        case 4: self = .productUnavailable
        case 5: self = .other
        default: self = .unknown
        }
    }
}

/// An introductory, promotional or offer-code price the current period was bought at.
package struct Offer: Sendable, Equatable {
    /// `free_trial`, `introductory`, `promotional` or `offer_code`.
    package var type: String
    /// The promotional offer id or offer-code reference name, when Apple gives one.
    package var id: String?
}

/// How one product of one subscription (original transaction) stands at `now`.
package struct SubscriptionStatus: Sendable, Equatable {
    package var productID: String
    package var originalTransactionID: String
    package var state: SubscriptionState
    /// Whether this subscription gives access now, state and policy together.
    package var isEntitled: Bool
    package var expiresAt: Int64?
    package var gracePeriodExpiresAt: Int64?
    package var willRenew: Bool
    /// The product of the next renewal when it differs from `productID` (a downgrade or crossgrade
    /// waiting for the next renewal).
    package var renewsInto: String?
    /// `normal`, `trial` or `intro`.
    package var periodType: String
    package var offer: Offer?
    /// `purchased` or `family_shared`.
    package var ownership: String
    package var environment: String
    /// The store that stated the current period.
    package var store: Store = .appStore
    /// The current period's transaction.
    package var storeTransactionID: String
    /// The current transaction's price, with its source.
    package var price: Price? = nil
    package var purchasedAt: Int64?
    package var originalPurchasedAt: Int64?
    package var refundedAt: Int64?
    /// Set while expired (or in billing retry): why.
    package var expirationReason: ExpirationReason?
    /// `pending_consent` or `agreed`, while Apple has a price increase on record.
    package var priceIncrease: String?
    /// When auto-renew was first seen off in the current run of "off" snapshots.
    package var unsubscribeDetectedAt: Int64?
    /// When the current billing problem (grace period, billing retry, account hold) was first seen.
    package var billingIssueDetectedAt: Int64?
    /// While paused (Google Play): when the subscription resumes.
    package var resumesAt: Int64? = nil
    /// While refunded or revoked: how (its kind and share, when the store said).
    package var refund: Refund? = nil
    /// A monthly plan with a 12-month commitment: where in it the current period is.
    package var commitment: Commitments.Status? = nil
    /// Apple's `appTransactionId` of the Apple Account that bought it, when a signed transaction of
    /// the subscription stated it.
    package var appTransactionID: String? = nil
    package var explanation: Explanation
}

/// One purchase of a product that is not an auto-renewable subscription.
package struct NonSubscriptionPurchase: Sendable, Equatable {
    package var productID: String
    package var transactionID: String
    package var kind: Catalog.Kind
    package var purchasedAt: Int64?
    /// Non-renewing subscriptions only: the end of this purchase's stacked period.
    package var expiresAt: Int64?
    package var refundedAt: Int64?
    package var environment: String
    /// The store that stated the purchase.
    package var store: Store = .appStore
    package var price: Price? = nil
    package var ownership: String
    package var quantity: Int64?
    package var isEntitled: Bool
    /// Refunded or revoked: how (its kind and share, when the store said).
    package var refund: Refund? = nil
    /// Of several units bought at once, how many the refund took back (``Refund/refundedUnits(of:)``).
    package var refundedQuantity: Int64? = nil
    /// Apple's `appTransactionId` of the Apple Account that bought it, when stated.
    package var appTransactionID: String? = nil
    package var explanation: Explanation
}
