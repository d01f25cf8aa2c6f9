import Entitlements

extension ChartDefinition {
    /// Churn: who paid at each period's start, whose paid access ended in it (after any grace
    /// period) and had not resumed, and who resubscribed after a gap; the rate is (churned −
    /// resubscribed) ÷ actives at the start.
    static let churn = ChartDefinition(
        measures: ["actives_at_start", "churned", "resubscribed", "churn_rate"],
        parts: { $0 == "churn_rate" ? ["churned", "resubscribed", "actives_at_start"] : nil },
        startStocks: ["actives_at_start"], followsSubscriptions: true,
        record: { $0.churn() },
        close: {
            $0.settle(["actives_at_start"], at: $0.starts)
            $0.zero(["churned", "resubscribed"])
            $0.ratio("churn_rate", "churned", "actives_at_start", minus: "resubscribed")
        })
}

/// How a ledger becomes the churn chart's items.
extension ItemRecorder {
    /// Churned: paid access that ended (after any grace period) and had not resumed;
    /// resubscribed: paid access resumed after a gap; and who paid at each period's start.
    mutating func churn() {
        for (index, line) in lines.enumerated() {
            for piece in paying[index] {
                stock("actives_at_start", .stockAtStart, from: piece.start, to: piece.end, 1, piece.entry)
            }
            for (n, interval) in line.paid.enumerated() {
                if let e = line.payingEntry(at: interval.end - 1) {
                    flow("churned", at: interval.end, 1, e, detail: "paid access ended")
                }
                if n > 0, let e = line.payingEntry(at: interval.start) {
                    flow("resubscribed", at: interval.start, 1, e, detail: "paid access resumed after a gap")
                }
            }
        }
    }
}
