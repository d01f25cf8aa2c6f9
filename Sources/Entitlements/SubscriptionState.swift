/// The state of one auto-renewable subscription at a moment (Docs/apple-protocols.md §1.8, and
/// Google Play's `subscriptionState`, Docs/google-play.md).
public enum SubscriptionState: String, Sendable, Equatable, CaseIterable {
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
public enum ExpirationReason: String, Sendable, Equatable {
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
public struct Offer: Sendable, Equatable {
    /// `free_trial`, `introductory`, `promotional` or `offer_code`.
    public var type: String
    /// The promotional offer id or offer-code reference name, when Apple gives one.
    public var id: String?
}

/// How one product of one subscription (original transaction) stands at `now`.
public struct SubscriptionStatus: Sendable, Equatable {
    public var productID: String
    public var originalTransactionID: String
    public var state: SubscriptionState
    /// Whether this subscription gives access now, state and policy together.
    public var isEntitled: Bool
    public var expiresAt: Int64?
    public var gracePeriodExpiresAt: Int64?
    public var willRenew: Bool
    /// The product of the next renewal when it differs from `productID` (a downgrade or crossgrade
    /// waiting for the next renewal).
    public var renewsInto: String?
    /// `normal`, `trial` or `intro`.
    public var periodType: String
    public var offer: Offer?
    /// `purchased` or `family_shared`.
    public var ownership: String
    public var environment: String
    /// The store that stated the current period.
    public var store: Store = .appStore
    /// The current period's transaction.
    public var storeTransactionID: String
    /// The current transaction's price, with its source.
    public var price: Price? = nil
    public var purchasedAt: Int64?
    public var originalPurchasedAt: Int64?
    public var refundedAt: Int64?
    /// Set while expired (or in billing retry): why.
    public var expirationReason: ExpirationReason?
    /// `pending_consent` or `agreed`, while Apple has a price increase on record.
    public var priceIncrease: String?
    /// When auto-renew was first seen off in the current run of "off" snapshots.
    public var unsubscribeDetectedAt: Int64?
    /// When the current billing problem (grace period, billing retry, account hold) was first seen.
    public var billingIssueDetectedAt: Int64?
    /// While paused (Google Play): when the subscription resumes.
    public var resumesAt: Int64? = nil
    /// While refunded or revoked: how (its kind and share, when the store said).
    public var refund: Refund? = nil
    /// A monthly plan with a 12-month commitment: where in it the current period is.
    public var commitment: Commitments.Status? = nil
    /// Apple's `appTransactionId` of the Apple Account that bought it, when a signed transaction of
    /// the subscription stated it.
    public var appTransactionID: String? = nil
    public var explanation: Explanation
}

/// One purchase of a product that is not an auto-renewable subscription.
public struct NonSubscriptionPurchase: Sendable, Equatable {
    public var productID: String
    public var transactionID: String
    public var kind: Catalog.Kind
    public var purchasedAt: Int64?
    /// Non-renewing subscriptions only: the end of this purchase's stacked period.
    public var expiresAt: Int64?
    public var refundedAt: Int64?
    public var environment: String
    /// The store that stated the purchase.
    public var store: Store = .appStore
    public var price: Price? = nil
    public var ownership: String
    public var quantity: Int64?
    public var isEntitled: Bool
    /// Refunded or revoked: how (its kind and share, when the store said).
    public var refund: Refund? = nil
    /// Of several units bought at once, how many the refund took back (``Refund/refundedUnits(of:)``).
    public var refundedQuantity: Int64? = nil
    /// Apple's `appTransactionId` of the Apple Account that bought it, when stated.
    public var appTransactionID: String? = nil
    public var explanation: Explanation
}
