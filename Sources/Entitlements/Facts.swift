/// What is known about a user's purchases, as the pure derivation needs it. Dates are epoch
/// milliseconds. ReceiptService fills these from storage; nothing here does I/O.
public struct Purchase: Sendable, Equatable {
    public var transactionID: String
    public var originalTransactionID: String
    public var productID: String
    public var purchaseDate: Int64?
    public var originalPurchaseDate: Int64?
    /// Present for auto-renewable subscriptions only.
    public var expiresDate: Int64?
    /// A refund or a revocation (apple-protocols.md §1.6).
    public var cancellationDate: Int64?
    public var isTrialPeriod: Bool
    public var isInIntroOfferPeriod: Bool
    /// Cancelled because the user upgraded within the group (§1.8).
    public var isUpgraded: Bool
    /// `PURCHASED` or `FAMILY_SHARED`.
    public var ownershipType: String?
    /// `production` or `sandbox`.
    public var environment: String

    public init(
        transactionID: String, originalTransactionID: String, productID: String, purchaseDate: Int64? = nil,
        originalPurchaseDate: Int64? = nil, expiresDate: Int64? = nil, cancellationDate: Int64? = nil,
        isTrialPeriod: Bool = false, isInIntroOfferPeriod: Bool = false, isUpgraded: Bool = false,
        ownershipType: String? = nil, environment: String = "production"
    ) {
        self.transactionID = transactionID
        self.originalTransactionID = originalTransactionID
        self.productID = productID
        self.purchaseDate = purchaseDate
        self.originalPurchaseDate = originalPurchaseDate
        self.expiresDate = expiresDate
        self.cancellationDate = cancellationDate
        self.isTrialPeriod = isTrialPeriod
        self.isInIntroOfferPeriod = isInIntroOfferPeriod
        self.isUpgraded = isUpgraded
        self.ownershipType = ownershipType
        self.environment = environment
    }
}

/// Apple's pending renewal info for one subscription (§1.7).
public struct Renewal: Sendable, Equatable {
    public var originalTransactionID: String
    public var autoRenewProductID: String?
    public var autoRenewStatus: Bool?
    public var expirationIntent: Int64?
    public var gracePeriodExpiresDate: Int64?
    public var isInBillingRetryPeriod: Bool?

    public init(
        originalTransactionID: String, autoRenewProductID: String? = nil, autoRenewStatus: Bool? = nil,
        expirationIntent: Int64? = nil, gracePeriodExpiresDate: Int64? = nil, isInBillingRetryPeriod: Bool? = nil
    ) {
        self.originalTransactionID = originalTransactionID
        self.autoRenewProductID = autoRenewProductID
        self.autoRenewStatus = autoRenewStatus
        self.expirationIntent = expirationIntent
        self.gracePeriodExpiresDate = gracePeriodExpiresDate
        self.isInBillingRetryPeriod = isInBillingRetryPeriod
    }
}
