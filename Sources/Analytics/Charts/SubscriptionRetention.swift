import Entitlements

extension ChartDefinition {
    /// Subscription retention: subscriptions by the period their paid access first began, and
    /// per period on how many of them still pay (`paying_N`) and their share (`retention_N`).
    static let subscriptionRetention = ChartDefinition(
        measures: ["subscriptions"],
        parts: { measure in
            guard measure.hasPrefix("retention_") else { return nil }
            return ["paying_" + measure.dropFirst("retention_".count), "subscriptions"]
        },
        cohortBase: "subscriptions", followsSubscriptions: true, record: { $0.subscriptionRetention() },
        close: { $0.settleCohorts() })
}

/// How a ledger becomes the subscription_retention chart's items.
extension ItemRecorder {
    /// Each subscription in the cohort of its first paid instant, and the time it pays after.
    mutating func subscriptionRetention() {
        for (index, line) in lines.enumerated() {
            guard let start = line.paid.first?.start, let e = line.payingEntry(at: start) else { continue }
            flow("subscriptions", at: start, 1, e, detail: "first paid period", cohort: start)
            for piece in paying[index] { stock("paying", from: piece.start, to: piece.end, 1, piece.entry, cohort: start) }
        }
    }
}
