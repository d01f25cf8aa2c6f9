import Entitlements
import Identifiers

extension ChartDefinition {
    /// Trial conversion: each subscription's first free trial, in the cohort of its customer's
    /// first being seen (RevenueCat's), converted, pending or abandoned; the rate is converted ÷
    /// trials.
    static let trialConversion = ChartDefinition(
        measures: ["trials", "converted", "pending", "abandoned", "conversion_rate"],
        parts: { $0 == "conversion_rate" ? ["converted", "trials"] : nil }, byFirstSeen: true, followsSubscriptions: true,
        record: { $0.trialConversion() },
        close: {
            $0.zero(["trials", "converted", "pending", "abandoned"])
            $0.ratio("conversion_rate", "converted", "trials")
        })
}

/// How a ledger becomes the trial_conversion chart's items.
extension ItemRecorder {
    /// Each subscription's first free trial, by the period it started: converted once a paid
    /// period has begun after it (abandoned if that period was refunded); before that, pending
    /// while it runs set to renew, abandoned once it has ended (or when it is not set to renew).
    mutating func trialConversion() {
        let firstSeen = Newcomer.firstSeen(in: ledger)
        for line in lines {
            guard let trial = line.entries.first(where: { $0.purchase.isFreeTrial && !$0.purchase.isFamilyShared }),
                let start = trial.purchase.purchaseDate
            else { continue }
            let cohort = firstSeen[Identifier(line.appUserID)] ?? start
            flow("trials", at: start, 1, trial, cohort: cohort)
            let paid = line.entries.first { $0.purchase.isPaidPeriod && ($0.purchase.purchaseDate ?? .min) >= start }
            let paidFrom = paid?.purchase.purchaseDate ?? .max
            if let paid {
                if paid.purchase.isRefunded {
                    flow(
                        "abandoned", at: start, 1, paid, detail: "the first paid period was refunded", cohort: cohort,
                        valid: (paidFrom, .max))
                } else {
                    flow("converted", at: start, 1, paid, detail: "first paid period", cohort: cohort, valid: (paidFrom, .max))
                }
            }
            let ends = trial.purchase.accessEnd ?? .min
            let renews = line.renewal?.autoRenewStatus != false
            let abandonedFrom = renews ? ends : .min
            if renews, min(ends, paidFrom) > .min {
                flow(
                    "pending", at: start, 1, trial, detail: "trial running, set to renew", cohort: cohort,
                    valid: (.min, min(ends, paidFrom)))
            }
            if abandonedFrom < paidFrom {
                let why = trial.purchase.isRefunded ? "trial revoked" : "trial ended unpaid"
                flow("abandoned", at: start, 1, trial, detail: why, cohort: cohort, valid: (abandonedFrom, paidFrom))
            }
        }
    }
}
