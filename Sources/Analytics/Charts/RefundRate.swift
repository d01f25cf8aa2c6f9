import Entitlements

extension ChartDefinition {
    /// Refund rate: paid sales (free trials and family sharing aside) and those refunded, once
    /// refunded; the rate is refunded ÷ paid.
    static let refundRate = ChartDefinition(
        measures: ["paid_transactions", "refunded_transactions", "refund_rate"],
        parts: { $0 == "refund_rate" ? ["refunded_transactions", "paid_transactions"] : nil }, followsSubscriptions: false,
        record: { $0.refundRate() },
        close: {
            $0.zero(["paid_transactions", "refunded_transactions"])
            $0.ratio("refund_rate", "refunded_transactions", "paid_transactions")
        })
}

/// How a ledger becomes the refund_rate chart's items.
extension ItemRecorder {
    /// Paid sales (free trials and family sharing aside) and those refunded, once refunded.
    mutating func refundRate() {
        for e in admitted where !e.purchase.isFreeTrial && !e.purchase.isFamilyShared {
            guard let at = e.purchase.purchaseDate else { continue }
            flow("paid_transactions", at: at, 1, e)
            if e.purchase.isRefunded, let refunded = e.purchase.cancellationDate {
                flow(
                    "refunded_transactions", at: at, 1, e, detail: e.purchase.commerce.revocationType ?? "refund",
                    valid: (refunded, .max))
            }
        }
    }
}
