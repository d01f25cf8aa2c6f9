import Entitlements

extension ChartDefinition {
    /// Subscription status: at each period's end, paid subscriptions with access by their
    /// status (set to renew, set to cancel, in a billing grace period) and those without access
    /// the store is still retrying or holding (billing retry; Google Play's paused and on hold).
    static let subscriptionStatus = ChartDefinition(
        measures: statuses, stocks: Set(statuses),
        followsSubscriptions: true,
        record: { $0.subscriptionStatus() },
        close: { $0.settle(statuses, at: $0.instants) })

    private static let statuses = ["set_to_renew", "set_to_cancel", "billing_issue", "billing_retry", "paused", "on_hold"]
}

/// How a ledger becomes the subscription_status chart's items.
extension ItemRecorder {
    /// A period that renewed was set to renew. The latest one is as the store's renewal info says
    /// now (only the current status is known, as with RevenueCat): auto-renew off is set to
    /// cancel; the time after its expiry within a billing grace period is a billing issue. After
    /// paid access ended: the store retrying the charge, or Google Play's pause or hold, while the
    /// renewal info says so and no longer than the store allows (Apple retries for up to 60 days,
    /// Google holds an account for up to 60 and pauses for up to 3 months): every stock ends.
    mutating func subscriptionStatus() {
        for (index, line) in lines.enumerated() {
            let pieces = paying[index]
            guard let last = pieces.last else { continue }
            let renewal = line.renewal
            let lastExpiry = last.entry.purchase.accessEnd ?? last.end
            for piece in pieces.dropLast() { stock("set_to_renew", from: piece.start, to: piece.end, 1, piece.entry) }
            let current = renewal?.autoRenewStatus == false ? "set_to_cancel" : "set_to_renew"
            let expiry = min(max(lastExpiry, last.start), last.end)
            if last.start < expiry { stock(current, from: last.start, to: expiry, 1, last.entry, detail: "the renewal info now") }
            if expiry < last.end {
                stock("billing_issue", from: expiry, to: last.end, 1, last.entry, detail: "billing grace period")
            }
            let day: Int64 = 86_400_000
            let after: (String, Int64)? =
                switch renewal?.storeState {
                case "SUBSCRIPTION_STATE_PAUSED": ("paused", 92 * day)
                case "SUBSCRIPTION_STATE_ON_HOLD": ("on_hold", 60 * day)
                default: renewal?.isInBillingRetryPeriod == true ? ("billing_retry", 60 * day) : nil
                }
            if let (status, longest) = after {
                stock(status, from: last.end, to: last.end + longest, 1, last.entry, detail: "no access, the store's state now")
            }
        }
    }
}
