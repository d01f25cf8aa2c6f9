import Entitlements

extension ChartDefinition {
    /// New trials: each subscription's free trial, in the period it started.
    static let trials = ChartDefinition(
        measures: ["new_trials"], followsSubscriptions: false,
        record: { $0.newTrials() },
        close: { $0.zero(["new_trials"]) })
}

/// How a ledger becomes the trials chart's items.
extension ItemRecorder {
    mutating func newTrials() {
        for e in admitted where e.purchase.isFreeTrial && !e.purchase.isFamilyShared {
            guard let at = e.purchase.purchaseDate else { continue }
            flow("new_trials", at: at, 1, e)
        }
    }
}
