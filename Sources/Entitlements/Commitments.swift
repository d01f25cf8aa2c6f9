/// Monthly plans with a 12-month commitment (Apple, 2026: `billingPlanType` `MONTHLY`, each
/// month a transaction with its `commitmentInfo`; renewal info says whether the commitment renews
/// when its months end). Each month grants that month, like any monthly subscription; the
/// customer committed to all of them, so "billing continues through all 12 periods even if the
/// customer cancels the commitment renewal early"
/// (https://developer.apple.com/documentation/storekit/supporting-monthly-subscriptions-with-a-12-month-commitment).
/// Pure.
package enum Commitments {
    /// A subscription's commitment as its current period and renewal info state it.
    package struct Status: Sendable, Equatable {
        /// This period's month within the commitment, from 1.
        package var billingPeriod: Int64?
        package var billingPeriods: Int64?
        package var expiresAt: Int64?
        /// Apple's `commitmentPrice`, in milliunits of `currency` (the current transaction's).
        package var price: Int64?
        package var currency: String?
        /// Whether the commitment renews into another when it ends; false: the customer
        /// cancelled it; nil: renewal info has not said.
        package var willRenew: Bool?

        /// What the explanation states of it.
        package var facts: [Fact] {
            [
                Fact.number("commitment_billing_period", billingPeriod),
                Fact.number("commitment_billing_periods", billingPeriods),
                Fact.time("commitment_expires_date", expiresAt), Fact.flag("commitment_auto_renew_status", willRenew),
            ].compactMap { $0 }
        }

        /// The decision's sentence about it.
        package func sentence(_ t: (Int64) -> String) -> String {
            let month = billingPeriod.map { "month \($0)" + (billingPeriods.map { " of \($0)" } ?? "") } ?? "a month"
            let ends = expiresAt.map { " ending at \(t($0))" } ?? ""
            switch willRenew {
            case false?:
                return
                    "It is \(month) of a commitment\(ends); the customer cancelled the commitment's renewal, so billing goes on through its last month and access ends with it unless they renew."
            case true?:
                return "It is \(month) of a commitment\(ends), which renews into another unless the customer cancels it."
            case nil:
                return "It is \(month) of a commitment\(ends)."
            }
        }
    }

    /// `current`'s commitment, with the renewal info known (`renewal`); nil when it is no
    /// commitment plan's month.
    package static func status(of current: Purchase, renewal: Renewal?) -> Status? {
        let commerce = current.commerce
        guard commerce.billingPlanType?.uppercased() == "MONTHLY" || commerce.commitment != nil else { return nil }
        let c = commerce.commitment
        return Status(
            billingPeriod: c?.billingPeriodNumber, billingPeriods: c?.totalBillingPeriods, expiresAt: c?.expiresDate,
            price: c?.price, currency: c?.price == nil ? nil : commerce.price?.currency,
            willRenew: renewal?.commitment?.autoRenewStatus)
    }

    /// A commitment renewed into another: each period that is month 1 of a commitment and follows
    /// a commitment's month in the same subscription (`chain`, any order), dated at its purchase.
    static func renewalEvents(_ chain: [Purchase]) -> [LifecycleEvent] {
        let periods = chain.filter { !$0.isUpgraded }.sorted(by: Purchase.chronological)
        var events: [LifecycleEvent] = []
        for (previous, p) in zip(periods, periods.dropFirst()) {
            guard let c = p.commerce.commitment, c.billingPeriodNumber == 1, previous.commerce.commitment != nil else { continue }
            events.append(
                LifecycleEvent(
                    key: "commitment_renewal:\(p.transactionID)", kind: .commitmentRenewal, at: p.purchaseDate ?? 0,
                    productID: p.productID, originalTransactionID: p.originalTransactionID, transactionID: p.transactionID,
                    facts: [
                        Fact.number("commitment_billing_periods", c.totalBillingPeriods),
                        Fact.time("commitment_expires_date", c.expiresDate),
                        Fact.text("previous_product_id", previous.productID == p.productID ? nil : previous.productID),
                    ].compactMap { $0 }))
        }
        return events
    }
}
