import Entitlements

extension ChartDefinition {
    /// Non-subscription purchases: consumables, non-consumables and non-renewing subscriptions
    /// bought in the period (family members' copies aside), and those of them refunded since.
    static let nonSubscriptionPurchases = ChartDefinition(
        measures: ["purchases", "refunded_purchases"], followsSubscriptions: false,
        record: { $0.nonSubscriptionPurchases() },
        close: { $0.zero(["purchases", "refunded_purchases"]) })
}

/// How a ledger becomes the non_subscription_purchases chart's items.
extension ItemRecorder {
    mutating func nonSubscriptionPurchases() {
        for e in admitted where e.purchase.expiresDate == nil && !e.purchase.isFamilyShared {
            guard let at = e.purchase.purchaseDate else { continue }
            flow("purchases", at: at, 1, e, detail: e.purchase.productID)
            if e.purchase.isRefunded, let refunded = e.purchase.cancellationDate {
                let why = e.purchase.commerce.revocationType ?? "refund"
                flow("refunded_purchases", at: at, 1, e, detail: why, valid: (refunded, .max))
            }
        }
    }
}
