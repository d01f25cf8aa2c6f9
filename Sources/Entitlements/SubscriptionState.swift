/// The state of one auto-renewable subscription at a moment (apple-protocols.md §1.8).
public enum SubscriptionState: String, Sendable, Equatable, CaseIterable {
    /// The newest period has not expired and was not refunded.
    case active
    /// Expired, but within Apple's billing grace period: still entitled until it ends.
    case gracePeriod = "grace_period"
    /// Expired; Apple is still trying to bill (up to 60 days). Not entitled.
    case billingRetry = "billing_retry"
    case expired
    /// The newest period was refunded or revoked (`cancellation_date`). Not entitled.
    case refunded
    /// Superseded by a higher product in its group; the entitlement comes from that product.
    case upgraded

    /// Whether this state gives access.
    public var isEntitled: Bool { self == .active || self == .gracePeriod }
}

/// How one subscription (one original transaction) stands at `now`.
public struct SubscriptionStatus: Sendable, Equatable {
    public var productID: String
    public var originalTransactionID: String
    public var state: SubscriptionState
    public var expiresAt: Int64?
    public var gracePeriodExpiresAt: Int64?
    public var willRenew: Bool
    /// `normal`, `trial` or `intro`.
    public var periodType: String
    /// `purchased` or `family_shared`.
    public var ownership: String
    public var environment: String
    /// The newest period's transaction.
    public var storeTransactionID: String
    public var purchasedAt: Int64?
    public var originalPurchasedAt: Int64?
    public var refundedAt: Int64?
    /// When auto-renew was seen off while the subscription was still running (this derivation
    /// only knows "now": set to the newest period's purchase date as the earliest it can be).
    public var unsubscribeDetectedAt: Int64?
    /// When a billing problem was seen (grace period or billing retry), from the same evidence.
    public var billingIssueDetectedAt: Int64?

    public var isEntitled: Bool { state.isEntitled }
}

/// One purchase of a product that is not an auto-renewable subscription.
public struct NonSubscriptionPurchase: Sendable, Equatable {
    public var productID: String
    public var transactionID: String
    public var purchasedAt: Int64?
    public var refundedAt: Int64?
    public var environment: String
    public var ownership: String
    /// Non-consumables entitle forever unless refunded.
    public var isEntitled: Bool { refundedAt == nil }
}
