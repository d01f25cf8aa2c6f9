import Entitlements

extension ChartDefinition {
    /// Active subscriptions: paid (grace period included, family sharing not) and free trials, each
    /// counted over the time it runs, read at each period's last instant.
    static let actives = ChartDefinition(
        measures: ["subscriptions", "trials"], stocks: ["subscriptions", "trials"], followsSubscriptions: true,
        record: { $0.actives() },
        close: { $0.settle(["subscriptions", "trials"], at: $0.instants) })
}

/// How a ledger becomes the actives chart's items.
extension ItemRecorder {
    /// Paid subscriptions (grace period included, family sharing not) and free trials, over the
    /// time each runs.
    mutating func actives() {
        for (n, line) in lines.enumerated() {
            for piece in paying[n] { stock("subscriptions", from: piece.start, to: piece.end, 1, piece.entry) }
            for piece in line.trialPieces { stock("trials", from: piece.start, to: piece.end, 1, piece.entry) }
        }
    }
}
