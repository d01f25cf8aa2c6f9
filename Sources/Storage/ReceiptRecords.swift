import Identifiers

/// Rows of Migrations/0002_receipts.sql as Swift values. Storage knows nothing of Apple's wire
/// format: ReceiptService maps verified receipts into these.

/// One purchase, renewal or restore. Dates are epoch milliseconds.
public struct TransactionRecord: Sendable, Equatable {
    public var transactionID: String
    public var originalTransactionID: String
    public var productID: String
    public var bundleID: String
    /// `production` or `sandbox`.
    public var environment: String
    public var purchaseDate: Int64?
    public var originalPurchaseDate: Int64?
    public var expiresDate: Int64?
    public var cancellationDate: Int64?
    public var cancellationReason: String?
    public var quantity: Int64?
    public var isTrialPeriod: Bool
    public var isInIntroOfferPeriod: Bool
    public var isUpgraded: Bool
    public var ownershipType: String?
    public var subscriptionGroupID: String?
    public var webOrderLineItemID: String?
    public var promotionalOfferID: String?
    public var offerCodeRefName: String?
    /// StoreKit's `appAccountToken`: a UUID the app chose for its user at purchase.
    public var appAccountToken: String?
    /// The transaction object as Apple sent it (a signed payload without its `signedDate`).
    public var rawJSON: String

    public init(
        transactionID: String, originalTransactionID: String, productID: String, bundleID: String, environment: String,
        purchaseDate: Int64? = nil, originalPurchaseDate: Int64? = nil, expiresDate: Int64? = nil,
        cancellationDate: Int64? = nil, cancellationReason: String? = nil, quantity: Int64? = nil,
        isTrialPeriod: Bool = false, isInIntroOfferPeriod: Bool = false, isUpgraded: Bool = false,
        ownershipType: String? = nil, subscriptionGroupID: String? = nil, webOrderLineItemID: String? = nil,
        promotionalOfferID: String? = nil, offerCodeRefName: String? = nil, appAccountToken: String? = nil,
        rawJSON: String
    ) {
        self.transactionID = transactionID
        self.originalTransactionID = originalTransactionID
        self.productID = productID
        self.bundleID = bundleID
        self.environment = environment
        self.purchaseDate = purchaseDate
        self.originalPurchaseDate = originalPurchaseDate
        self.expiresDate = expiresDate
        self.cancellationDate = cancellationDate
        self.cancellationReason = cancellationReason
        self.quantity = quantity
        self.isTrialPeriod = isTrialPeriod
        self.isInIntroOfferPeriod = isInIntroOfferPeriod
        self.isUpgraded = isUpgraded
        self.ownershipType = ownershipType
        self.subscriptionGroupID = subscriptionGroupID
        self.webOrderLineItemID = webOrderLineItemID
        self.promotionalOfferID = promotionalOfferID
        self.offerCodeRefName = offerCodeRefName
        self.appAccountToken = appAccountToken
        self.rawJSON = rawJSON
    }
}

/// What Apple will do at the next renewal of one subscription.
public struct RenewalRecord: Sendable, Equatable {
    public var originalTransactionID: String
    public var productID: String?
    public var autoRenewProductID: String?
    public var autoRenewStatus: Bool?
    public var expirationIntent: Int64?
    public var gracePeriodExpiresDate: Int64?
    public var isInBillingRetryPeriod: Bool?
    public var priceConsentStatus: String?
    public var priceIncreaseStatus: String?
    public var offerCodeRefName: String?
    public var promotionalOfferID: String?
    public var environment: String
    public var rawJSON: String

    public init(
        originalTransactionID: String, productID: String? = nil, autoRenewProductID: String? = nil,
        autoRenewStatus: Bool? = nil, expirationIntent: Int64? = nil, gracePeriodExpiresDate: Int64? = nil,
        isInBillingRetryPeriod: Bool? = nil, priceConsentStatus: String? = nil, priceIncreaseStatus: String? = nil,
        offerCodeRefName: String? = nil, promotionalOfferID: String? = nil, environment: String, rawJSON: String
    ) {
        self.originalTransactionID = originalTransactionID
        self.productID = productID
        self.autoRenewProductID = autoRenewProductID
        self.autoRenewStatus = autoRenewStatus
        self.expirationIntent = expirationIntent
        self.gracePeriodExpiresDate = gracePeriodExpiresDate
        self.isInBillingRetryPeriod = isInBillingRetryPeriod
        self.priceConsentStatus = priceConsentStatus
        self.priceIncreaseStatus = priceIncreaseStatus
        self.offerCodeRefName = offerCodeRefName
        self.promotionalOfferID = promotionalOfferID
        self.environment = environment
        self.rawJSON = rawJSON
    }
}

/// Everything one verified receipt says, to be stored in one transaction.
public struct VerifiedReceiptRecord: Sendable, Equatable {
    public var environment: String
    public var transactions: [TransactionRecord]
    public var renewals: [RenewalRecord]
    /// Apple's `latest_receipt`, kept for each of the receipt's subscriptions.
    public var latestReceipt: String?
    /// When Apple stated these facts (a JWS's `signedDate`); nil: when they are saved. Rows stated
    /// later are never overwritten by these.
    public var statedAt: Int64?
    /// When the renewal info's change happened, when Apple says so (V1's
    /// `auto_renew_status_change_date_ms`, a V2 renewal's `signedDate`); nil: when it is saved. It
    /// dates the history row, never before the subscription's previous snapshot nor after now.
    public var renewalChangedAt: Int64?

    public init(
        environment: String, transactions: [TransactionRecord], renewals: [RenewalRecord], latestReceipt: String?,
        statedAt: Int64? = nil, renewalChangedAt: Int64? = nil
    ) {
        self.environment = environment
        self.transactions = transactions
        self.renewals = renewals
        self.latestReceipt = latestReceipt
        self.statedAt = statedAt
        self.renewalChangedAt = renewalChangedAt
    }

    /// The original transaction ids, in first-seen order.
    public var originals: [String] {
        var seen: Set<Identifier> = []
        return (transactions.map(\.originalTransactionID) + renewals.map(\.originalTransactionID)).filter {
            seen.insert(Identifier($0)).inserted
        }
    }
}

/// Who may hold a purchase another user already holds.
public enum OwnershipPolicy: String, Sendable, CaseIterable {
    /// The newest poster gets it; the transfer is recorded.
    case transfer
    /// The first holder keeps it; a second user is refused.
    case keep
    /// The newest poster gets it only when it gives its holder nothing now (expired, refunded,
    /// revoked); while it entitles them, a second user is refused as under `keep`. Decided by the
    /// caller, who can derive entitlements (see `SubscriberState.save`); storage treats it as `transfer`.
    case transferIfInactive = "transfer_if_inactive"
}

/// A renewal-info snapshot as first seen (`renewal_history`).
public struct RenewalSnapshot: Sendable, Equatable {
    /// Row id: orders snapshots seen in the same millisecond.
    public var id: Int64
    public var observedAt: Int64
    public var record: RenewalRecord

    public init(id: Int64, observedAt: Int64, record: RenewalRecord) {
        self.id = id
        self.observedAt = observedAt
        self.record = record
    }
}

/// A purchase changing holder (`ownership_transfers`); `from` is nil for the first holder.
public struct TransferRecord: Sendable, Equatable {
    public var originalTransactionID: String
    /// The newest product of the purchase, when its transactions are stored.
    public var productID: String?
    public var from: String?
    public var to: String
    public var at: Int64

    public init(originalTransactionID: String, productID: String?, from: String?, to: String, at: Int64) {
        self.originalTransactionID = originalTransactionID
        self.productID = productID
        self.from = from
        self.to = to
        self.at = at
    }
}

/// A stored subscriber and everything their purchases say.
public struct SubscriberRecord: Sendable, Equatable {
    public var appUserID: String
    /// The subscriber document's version and the fingerprint it was computed with.
    public var version: Int64
    public var stateHash: String?
    public var transactions: [TransactionRecord]
    /// Every renewal snapshot of the purchases held, oldest first.
    public var renewalHistory: [RenewalSnapshot]
    /// Every change of holder of those purchases, and of purchases taken away from this subscriber.
    public var transfers: [TransferRecord]

    public init(
        appUserID: String, version: Int64, stateHash: String?, transactions: [TransactionRecord],
        renewalHistory: [RenewalSnapshot], transfers: [TransferRecord]
    ) {
        self.appUserID = appUserID
        self.version = version
        self.stateHash = stateHash
        self.transactions = transactions
        self.renewalHistory = renewalHistory
        self.transfers = transfers
    }

    /// The original transaction ids this subscriber holds.
    public var originals: Set<Identifier> { Set(transactions.map { Identifier($0.originalTransactionID) }) }
}

/// One lifecycle event row (`events`).
public struct EventRecord: Sendable, Equatable {
    /// Row id; 0 for an event not stored yet.
    public var id: Int64
    public var key: String
    public var type: String
    public var at: Int64
    public var productID: String
    public var originalTransactionID: String
    public var transactionID: String?
    /// A JSON object of the facts behind the event.
    public var factsJSON: String
    public var recordedAt: Int64

    public init(
        id: Int64 = 0, key: String, type: String, at: Int64, productID: String, originalTransactionID: String,
        transactionID: String?, factsJSON: String, recordedAt: Int64 = 0
    ) {
        self.id = id
        self.key = key
        self.type = type
        self.at = at
        self.productID = productID
        self.originalTransactionID = originalTransactionID
        self.transactionID = transactionID
        self.factsJSON = factsJSON
        self.recordedAt = recordedAt
    }

    /// Whether two rows say the same thing (ids and recording times aside).
    public func sameContent(as other: EventRecord) -> Bool {
        var a = self
        var b = other
        (a.id, a.recordedAt, b.id, b.recordedAt) = (0, 0, 0, 0)
        return a == b
    }
}

/// One row of the verification log.
public struct VerificationLogEntry: Sendable, Equatable {
    public var appUserID: String?
    public var environment: String?
    public var appleStatus: Int?
    /// A short outcome name, e.g. `valid`, `invalid_receipt`, `unavailable`.
    public var outcome: String
    public var attempts: Int
    public var latencyMs: Int64

    public init(appUserID: String?, environment: String?, appleStatus: Int?, outcome: String, attempts: Int, latencyMs: Int64) {
        self.appUserID = appUserID
        self.environment = environment
        self.appleStatus = appleStatus
        self.outcome = outcome
        self.attempts = attempts
        self.latencyMs = latencyMs
    }
}
