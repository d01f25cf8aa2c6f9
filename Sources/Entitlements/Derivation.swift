/// Derives subscription states from stored facts, by Apple's rules (apple-protocols.md §1.8):
/// the newest period of each subscription decides (never array order); a refund wins; an
/// upgraded period hands over to the product it was upgraded to; an expired period is in grace
/// while `grace_period_expires_date` is ahead, in billing retry while Apple says so, else expired.
public enum Derivation {
    /// One status per subscription (original transaction id), ordered by product then id.
    public static func subscriptions(purchases: [Purchase], renewals: [Renewal], now: Int64) -> [SubscriptionStatus] {
        let renewalByOriginal = Dictionary(renewals.map { ($0.originalTransactionID, $0) }, uniquingKeysWith: { a, _ in a })
        let periods = Dictionary(grouping: purchases.filter { $0.expiresDate != nil }, by: \.originalTransactionID)
        var statuses: [SubscriptionStatus] = []
        for (original, group) in periods {
            // The newest period: latest expiry, then latest purchase, then the larger id (stable).
            let newest = group.max { a, b in
                (a.expiresDate ?? 0, a.purchaseDate ?? 0, a.transactionID) < (
                    b.expiresDate ?? 0, b.purchaseDate ?? 0, b.transactionID
                )
            }!
            let renewal = renewalByOriginal[original]
            statuses.append(status(of: newest, in: group, renewal: renewal, now: now))
        }
        return statuses.sorted { ($0.productID, $0.originalTransactionID) < ($1.productID, $1.originalTransactionID) }
    }

    /// Purchases without an expiry (non-consumables, consumables, non-renewing), newest first.
    public static func nonSubscriptions(purchases: [Purchase]) -> [NonSubscriptionPurchase] {
        purchases.filter { $0.expiresDate == nil }
            .sorted { ($0.purchaseDate ?? 0, $0.transactionID) > ($1.purchaseDate ?? 0, $1.transactionID) }
            .map {
                NonSubscriptionPurchase(
                    productID: $0.productID, transactionID: $0.transactionID, purchasedAt: $0.purchaseDate,
                    refundedAt: $0.cancellationDate, environment: $0.environment, ownership: ownership($0))
            }
    }

    static func status(of newest: Purchase, in group: [Purchase], renewal: Renewal?, now: Int64) -> SubscriptionStatus {
        let expires = newest.expiresDate ?? 0
        let grace = renewal?.gracePeriodExpiresDate
        let state: SubscriptionState
        if newest.isUpgraded {
            state = .upgraded
        } else if newest.cancellationDate != nil {
            state = .refunded
        } else if expires > now {
            state = .active
        } else if let grace, grace > now {
            state = .gracePeriod
        } else if renewal?.isInBillingRetryPeriod == true {
            state = .billingRetry
        } else {
            state = .expired
        }
        let autoRenew = renewal?.autoRenewStatus ?? false
        let willRenew = autoRenew && (state == .active || state == .gracePeriod || state == .billingRetry)
        let billingIssue = state == .gracePeriod || state == .billingRetry
        return SubscriptionStatus(
            productID: newest.productID, originalTransactionID: newest.originalTransactionID, state: state,
            expiresAt: newest.expiresDate, gracePeriodExpiresAt: state == .gracePeriod ? grace : nil,
            willRenew: willRenew,
            periodType: newest.isTrialPeriod ? "trial" : newest.isInIntroOfferPeriod ? "intro" : "normal",
            ownership: ownership(newest), environment: newest.environment, storeTransactionID: newest.transactionID,
            purchasedAt: newest.purchaseDate,
            originalPurchasedAt: newest.originalPurchaseDate ?? group.compactMap(\.purchaseDate).min(),
            refundedAt: state == .refunded ? newest.cancellationDate : nil,
            unsubscribeDetectedAt: renewal?.autoRenewStatus == false && state != .refunded && state != .upgraded
                ? newest.purchaseDate : nil,
            billingIssueDetectedAt: billingIssue ? newest.expiresDate : nil)
    }

    static func ownership(_ p: Purchase) -> String {
        p.ownershipType?.uppercased() == "FAMILY_SHARED" ? "family_shared" : "purchased"
    }
}
