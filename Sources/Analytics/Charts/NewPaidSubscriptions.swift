import Entitlements

extension ChartDefinition {
    /// New paid subscriptions: subscriptions whose first paid period began in the period (the
    /// active subscriptions movement's new actives), by how they began: converted from a free
    /// trial, at a paid introductory offer, or directly.
    static let newPaidSubscriptions = ChartDefinition(
        measures: ["trial_conversions", "intro_offers", "direct_subscriptions", "new_paid_subscriptions"],
        followsSubscriptions: true,
        record: { $0.newPaidSubscriptions() },
        close: { $0.zero(["trial_conversions", "intro_offers", "direct_subscriptions", "new_paid_subscriptions"]) })
}

/// How a ledger becomes the new_paid_subscriptions chart's items.
extension ItemRecorder {
    /// Each subscription's first paid access, once, by what came before it on the subscription.
    mutating func newPaidSubscriptions() {
        for line in lines {
            guard let start = line.paid.first?.start, let e = line.payingEntry(at: start) else { continue }
            let afterTrial = line.entries.contains {
                $0.purchase.isFreeTrial && !$0.purchase.isFamilyShared && ($0.purchase.purchaseDate ?? .max) < start
            }
            let (measure, why) =
                afterTrial
                ? ("trial_conversions", "converted from a trial")
                : e.purchase.commerce.offerType == 1 || e.purchase.isInIntroOfferPeriod
                    ? ("intro_offers", "at an introductory offer") : ("direct_subscriptions", "direct")
            flow(measure, at: start, 1, e)
            flow("new_paid_subscriptions", at: start, 1, e, detail: why)
        }
    }
}
