import Identifiers

/// What is known about a user's purchases: the one family of purchase types. Each store's wire
/// models are mapped into these once, by the store (`AppleFacts`, `PlayFacts`); Storage stores and
/// returns them with their provenance; the pure derivation reads them. Dates are epoch milliseconds. Nothing here
/// does I/O.
package struct Facts: Sendable, Equatable {
    /// Every transaction of every purchase the user holds (Docs/apple-protocols.md §1.6), any order.
    package var purchases: [Purchase]
    /// Every renewal-info snapshot ever seen for those purchases (§1.7), any order. The newest per
    /// subscription is the current one; the older ones date changes (cancellation, billing issues).
    package var renewals: [RenewalObservation]
    /// Changes of holder of the user's purchases, to them or away from them.
    package var transfers: [Transfer]
    /// The user's other ids (aliases), each with when it joined them.
    package var aliases: [Alias]
    /// Entitlements given by support rather than bought, revoked or not.
    package var promotions: [Promotion]
    /// StoreKit's AppTransactions their app posted: which version of the app they first got.
    package var appTransactions: [AppTransaction]

    package init(
        purchases: [Purchase], renewals: [RenewalObservation] = [], transfers: [Transfer] = [], aliases: [Alias] = [],
        promotions: [Promotion] = [], appTransactions: [AppTransaction] = []
    ) {
        self.purchases = purchases
        self.renewals = renewals
        self.transfers = transfers
        self.aliases = aliases
        self.promotions = promotions
        self.appTransactions = appTransactions
    }

    /// Whether `appUserID` is the user (`canonical`) or one of their aliases, by exact bytes.
    package func isSelf(_ appUserID: String, canonical: String) -> Bool {
        appUserID.isExactly(canonical) || aliases.contains { $0.appUserID.isExactly(appUserID) }
    }
}

/// Another id of a user: since `at`, reads and writes under `appUserID` reach the user.
package struct Alias: Sendable, Equatable {
    package var appUserID: String
    package var at: Int64

    package init(appUserID: String, at: Int64) {
        self.appUserID = appUserID
        self.at = at
    }
}

/// One purchase, renewal or restore.
package struct Purchase: Sendable, Equatable {
    package var transactionID: String
    package var originalTransactionID: String
    package var productID: String
    package var purchaseDate: Int64?
    package var originalPurchaseDate: Int64?
    /// Present for auto-renewable subscriptions only.
    package var expiresDate: Int64?
    /// A refund or a revocation (Docs/apple-protocols.md §1.6).
    package var cancellationDate: Int64?
    /// `"1"`: a problem with the app; `"0"`: another reason.
    package var cancellationReason: String?
    package var isTrialPeriod: Bool
    package var isInIntroOfferPeriod: Bool
    /// Cancelled because the user upgraded within the group (§1.8): never grants access.
    package var isUpgraded: Bool
    /// `PURCHASED` or `FAMILY_SHARED`.
    package var ownershipType: String?
    package var environment: StoreEnvironment
    package var subscriptionGroupID: String?
    package var promotionalOfferID: String?
    package var offerCodeRefName: String?
    package var quantity: Int64?
    /// Links a subscription's renewals across devices (§1.6).
    package var webOrderLineItemID: String?
    /// StoreKit's `appAccountToken`: a UUID the app chose for its user at purchase.
    package var appAccountToken: String?
    /// Apple's `appTransactionId`: the Apple Account that got the app, the same on every purchase
    /// it makes in the app (signed transactions since 2025; verifyReceipt never states it).
    package var appTransactionID: String?
    /// The last refund of it the store reversed, if any (the current ``cancellationDate`` is another).
    package var refundReversal: RefundReversal?
    /// Who stated it.
    package var store: Store
    /// Its money and terms.
    package var commerce: Commerce

    package init(
        transactionID: String, originalTransactionID: String, productID: String, purchaseDate: Int64? = nil,
        originalPurchaseDate: Int64? = nil, expiresDate: Int64? = nil, cancellationDate: Int64? = nil,
        cancellationReason: String? = nil, isTrialPeriod: Bool = false, isInIntroOfferPeriod: Bool = false,
        isUpgraded: Bool = false, ownershipType: String? = nil, environment: StoreEnvironment = .production,
        subscriptionGroupID: String? = nil, promotionalOfferID: String? = nil, offerCodeRefName: String? = nil,
        quantity: Int64? = nil, webOrderLineItemID: String? = nil, appAccountToken: String? = nil,
        appTransactionID: String? = nil, refundReversal: RefundReversal? = nil, store: Store = .appStore,
        commerce: Commerce = Commerce()
    ) {
        self.transactionID = transactionID
        self.originalTransactionID = originalTransactionID
        self.productID = productID
        self.purchaseDate = purchaseDate
        self.originalPurchaseDate = originalPurchaseDate
        self.expiresDate = expiresDate
        self.cancellationDate = cancellationDate
        self.cancellationReason = cancellationReason
        self.isTrialPeriod = isTrialPeriod
        self.isInIntroOfferPeriod = isInIntroOfferPeriod
        self.isUpgraded = isUpgraded
        self.ownershipType = ownershipType
        self.environment = environment
        self.subscriptionGroupID = subscriptionGroupID
        self.promotionalOfferID = promotionalOfferID
        self.offerCodeRefName = offerCodeRefName
        self.quantity = quantity
        self.webOrderLineItemID = webOrderLineItemID
        self.appAccountToken = appAccountToken
        self.appTransactionID = appTransactionID
        self.refundReversal = refundReversal
        self.store = store
        self.commerce = commerce
    }

    package var isFamilyShared: Bool {
        guard let type = ownershipType else { return false }
        // Apple's spelling first: the charts ask this of every transaction, many times.
        return type == "FAMILY_SHARED" || (type != "PURCHASED" && type.uppercased() == "FAMILY_SHARED")
    }
    var ownership: String { isFamilyShared ? "family_shared" : "purchased" }

    /// The total order the derivation uses for a subscription's periods: by purchase date, then
    /// expiry, then id. Never the order Apple's arrays came in.
    package static func chronological(_ a: Purchase, _ b: Purchase) -> Bool {
        (a.purchaseDate ?? 0, a.expiresDate ?? 0, a.transactionID) < (b.purchaseDate ?? 0, b.expiresDate ?? 0, b.transactionID)
    }
}

/// What a store says of one subscription's next renewal: Apple's pending renewal info (§1.7), or
/// what Google Play's subscription resource says of it (its state, auto-renewal, a pause).
package struct Renewal: Sendable, Equatable {
    package var originalTransactionID: String
    package var productID: String?
    /// The product the subscription renews into; differs from `productID` after a downgrade or crossgrade.
    package var autoRenewProductID: String?
    package var autoRenewStatus: Bool?
    /// 1–5 (§1.7).
    package var expirationIntent: Int64?
    package var gracePeriodExpiresDate: Int64?
    package var isInBillingRetryPeriod: Bool?
    /// `"0"` until the customer consents to a price increase, then `"1"`.
    package var priceConsentStatus: String?
    /// `"0"`: consent requested, no answer; `"1"`: consented, or notified of an increase needing none.
    package var priceIncreaseStatus: String?
    package var offerCodeRefName: String?
    package var promotionalOfferID: String?
    package var environment: StoreEnvironment
    /// Google Play's `subscriptionState` (`SUBSCRIPTION_STATE_ACTIVE`, `…_ON_HOLD`, `…_PAUSED`, …) as
    /// stated; nil for Apple, whose state follows from the fields above.
    package var storeState: String?
    /// When a paused Google Play subscription resumes.
    package var autoResumeDate: Int64?
    /// A monthly plan with a 12-month commitment: the next renewal's plan and the commitment's end.
    package var commitment: RenewalCommitment?

    package init(
        originalTransactionID: String, productID: String? = nil, autoRenewProductID: String? = nil,
        autoRenewStatus: Bool? = nil, expirationIntent: Int64? = nil, gracePeriodExpiresDate: Int64? = nil,
        isInBillingRetryPeriod: Bool? = nil, priceConsentStatus: String? = nil, priceIncreaseStatus: String? = nil,
        offerCodeRefName: String? = nil, promotionalOfferID: String? = nil, environment: StoreEnvironment = .production,
        storeState: String? = nil, autoResumeDate: Int64? = nil, commitment: RenewalCommitment? = nil
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
        self.storeState = storeState
        self.autoResumeDate = autoResumeDate
        self.commitment = commitment
    }
}

/// Apple's renewal info about a monthly plan with a 12-month commitment (`renewalBillingPlanType`
/// and `RenewalCommitmentInfo`, App Store Server API 1.21): the renewal status above is the next
/// month's; this is the commitment's own, whether it renews into another when its 12 months end.
package struct RenewalCommitment: Sendable, Equatable {
    /// `renewalBillingPlanType`: `MONTHLY` when the next renewal is a commitment plan's month.
    package var renewalBillingPlanType: String?
    /// Whether the commitment renews when it ends; false: the customer cancelled it, and billing
    /// still runs through its last month.
    package var autoRenewStatus: Bool?
    package var autoRenewProductID: String?
    package var renewalDate: Int64?
    /// Milliunits of the subscription's currency.
    package var renewalPrice: Int64?
    package var renewalPlanType: String?

    package init(
        renewalBillingPlanType: String? = nil, autoRenewStatus: Bool? = nil, autoRenewProductID: String? = nil,
        renewalDate: Int64? = nil, renewalPrice: Int64? = nil, renewalPlanType: String? = nil
    ) {
        self.renewalBillingPlanType = renewalBillingPlanType
        self.autoRenewStatus = autoRenewStatus
        self.autoRenewProductID = autoRenewProductID
        self.renewalDate = renewalDate
        self.renewalPrice = renewalPrice
        self.renewalPlanType = renewalPlanType
    }
}

/// A renewal-info snapshot and when receiptd saw it. `sequence` orders snapshots seen in the
/// same millisecond (storage's row id).
package struct RenewalObservation: Sendable, Equatable {
    package var observedAt: Int64
    package var sequence: Int64
    package var renewal: Renewal

    package init(observedAt: Int64, sequence: Int64 = 0, renewal: Renewal) {
        self.observedAt = observedAt
        self.sequence = sequence
        self.renewal = renewal
    }

    static func chronological(_ a: RenewalObservation, _ b: RenewalObservation) -> Bool {
        (a.observedAt, a.sequence) < (b.observedAt, b.sequence)
    }
}

/// A purchase changing holder: `from` is nil for its first holder.
package struct Transfer: Sendable, Equatable {
    package var originalTransactionID: String
    /// The subscription's product, when known.
    package var productID: String?
    package var from: String?
    package var to: String
    package var at: Int64

    package init(originalTransactionID: String, productID: String? = nil, from: String?, to: String, at: Int64) {
        self.originalTransactionID = originalTransactionID
        self.productID = productID
        self.from = from
        self.to = to
        self.at = at
    }
}

extension Facts {
    /// Every instant the facts name. Derivation compares `now` only with these and with times it
    /// computes from them (which its answer shows), so its answer is constant between two of them.
    package var instants: [Int64] {
        var all: [Int64] = []
        for p in purchases {
            for t in [p.purchaseDate, p.originalPurchaseDate, p.expiresDate, p.cancellationDate] { if let t { all.append(t) } }
        }
        for r in renewals {
            all.append(r.observedAt)
            if let grace = r.renewal.gracePeriodExpiresDate { all.append(grace) }
            if let resumes = r.renewal.autoResumeDate { all.append(resumes) }
        }
        for t in transfers { all.append(t.at) }
        for a in aliases { all.append(a.at) }
        for p in promotions { all += [p.startsAt, p.expiresAt] + (p.revokedAt.map { [$0] } ?? []) }
        return all
    }

    /// The same facts with every date pinned into `range`: facts read back from storage may hold
    /// dates written before dates were checked on entry, and the derivation's arithmetic must not
    /// overflow on them.
    package func clamped(to range: ClosedRange<Int64>) -> Facts {
        func pin(_ t: Int64) -> Int64 { min(max(t, range.lowerBound), range.upperBound) }
        func pin(_ t: Int64?) -> Int64? { t.map { pin($0) } }
        var facts = self
        for i in facts.purchases.indices {
            facts.purchases[i].purchaseDate = pin(purchases[i].purchaseDate)
            facts.purchases[i].originalPurchaseDate = pin(purchases[i].originalPurchaseDate)
            facts.purchases[i].expiresDate = pin(purchases[i].expiresDate)
            facts.purchases[i].cancellationDate = pin(purchases[i].cancellationDate)
        }
        for i in facts.renewals.indices {
            facts.renewals[i].observedAt = pin(renewals[i].observedAt)
            facts.renewals[i].renewal.gracePeriodExpiresDate = pin(renewals[i].renewal.gracePeriodExpiresDate)
            facts.renewals[i].renewal.autoResumeDate = pin(renewals[i].renewal.autoResumeDate)
        }
        for i in facts.transfers.indices { facts.transfers[i].at = pin(transfers[i].at) }
        for i in facts.aliases.indices { facts.aliases[i].at = pin(aliases[i].at) }
        for i in facts.promotions.indices {
            facts.promotions[i].startsAt = pin(promotions[i].startsAt)
            facts.promotions[i].expiresAt = pin(promotions[i].expiresAt)
            facts.promotions[i].revokedAt = pin(promotions[i].revokedAt)
        }
        for i in facts.appTransactions.indices {
            facts.appTransactions[i].originalPurchaseDate = pin(appTransactions[i].originalPurchaseDate)
        }
        return facts
    }
}
