import Entitlements

// The movement charts: why a stock moved between two periods' ends. Each has the stock at the
// end of the period before (`starting_…`) and at the period's end (`ending_…`), and the flows
// between them, so that starting + net movement = ending in every period (a property test holds
// them to it). A stock read "at the end of the period before" is one read at the period's first
// instant of an item a millisecond later: counted at a period starting at s when it ran at s − 1.

extension ChartDefinition {
    /// MRR movement: MRR at the end of the period before, what new, reactivated, expanded,
    /// contracted and churned subscriptions moved it by, the net movement, and MRR at the end.
    static let mrrMovement = ChartDefinition(
        measures: [
            "starting_mrr", "new_mrr", "reactivation_mrr", "expansion_mrr", "contraction_mrr", "churned_mrr", "net_mrr_movement",
            "ending_mrr",
        ],
        money: [
            "starting_mrr", "new_mrr", "reactivation_mrr", "expansion_mrr", "contraction_mrr", "churned_mrr", "net_mrr_movement",
            "ending_mrr",
        ],
        stocks: ["ending_mrr"], startStocks: ["starting_mrr"], followsSubscriptions: true,
        record: { $0.mrrMovement() },
        close: {
            $0.settle(["ending_mrr"], at: $0.instants)
            $0.settle(["starting_mrr"], at: $0.starts)
            $0.zero(["new_mrr", "reactivation_mrr", "expansion_mrr", "contraction_mrr", "churned_mrr", "net_mrr_movement"])
        })

    /// Active subscriptions movement: paid subscriptions at the end of the period before, new
    /// ones, those resubscribed after a gap, those churned, the net movement, and at the end.
    static let activesMovement = ChartDefinition(
        measures: [
            "starting_actives", "new_actives", "resubscribed_actives", "churned_actives", "net_actives_movement",
            "ending_actives",
        ],
        stocks: ["ending_actives"], startStocks: ["starting_actives"], followsSubscriptions: true,
        record: { $0.activesMovement() },
        close: {
            $0.settle(["ending_actives"], at: $0.instants)
            $0.settle(["starting_actives"], at: $0.starts)
            $0.zero(["new_actives", "resubscribed_actives", "churned_actives", "net_actives_movement"])
        })

    /// Active trials movement: free trials running at the end of the period before, new ones,
    /// those that ended (converted or not), the net movement, and at the end.
    static let trialsMovement = ChartDefinition(
        measures: ["starting_trials", "new_trials", "expired_trials", "net_trials_movement", "ending_trials"],
        stocks: ["ending_trials"], startStocks: ["starting_trials"], followsSubscriptions: true,
        record: { $0.trialsMovement() },
        close: {
            $0.settle(["ending_trials"], at: $0.instants)
            $0.settle(["starting_trials"], at: $0.starts)
            $0.zero(["new_trials", "expired_trials", "net_trials_movement"])
        })
}

/// How a ledger becomes the movement charts' items.
extension ItemRecorder {
    /// A stock as both ends of a movement chart read it: at each period's end, and at the end of
    /// the period before (a millisecond later, read at period starts).
    private mutating func ends(
        _ name: String, _ piece: SubscriptionLine.Piece, _ value: Int64, money: Bool = false,
        detail: @autoclosure () -> String? = nil, notes: [ItemNote] = []
    ) {
        stock(
            "ending_" + name, from: piece.start, to: piece.end, value, piece.entry, money: money, detail: detail(), notes: notes)
        stock(
            "starting_" + name, .stockAtStart, from: piece.start + 1, to: piece.end + 1, value, piece.entry, money: money,
            detail: detail())
    }

    /// Each subscription's paying pieces in order: where one starts after a gap (or first) its
    /// MRR is new (or reactivated); where one follows another at a different MRR (an upgrade, a
    /// downgrade, a price change, an offer ending) the difference is expansion or contraction;
    /// where one ends with nothing following, its MRR churned. A piece without a price counts 0
    /// and carries the note of why.
    mutating func mrrMovement() {
        for pieces in paying {
            var previous: (end: Int64, value: Int64)?
            for (k, piece) in pieces.enumerated() {
                let e = piece.entry
                let m = monthly(e)
                let value = m.value ?? 0
                ends("mrr", piece, value, money: true, detail: m.detail(), notes: m.notes)
                if let previous, previous.end == piece.start {
                    let change = value - previous.value
                    let why = { "\(m.detail()) from \(Money.text(previous.value))" }
                    if change > 0 {
                        flow("expansion_mrr", at: piece.start, change, e, money: true, detail: why())
                    } else if change < 0 {
                        flow("contraction_mrr", at: piece.start, -change, e, money: true, detail: why())
                    }
                    if change != 0 { flow("net_mrr_movement", at: piece.start, change, e, money: true, detail: "changed") }
                } else {
                    let measure = previous == nil ? "new_mrr" : "reactivation_mrr"
                    flow(measure, at: piece.start, value, e, money: true, detail: m.detail())
                    let why = previous == nil ? "new" : "reactivated"
                    flow("net_mrr_movement", at: piece.start, value, e, money: true, detail: why)
                }
                let followed = k + 1 < pieces.count && pieces[k + 1].start == piece.end
                if !followed {
                    flow("churned_mrr", at: piece.end, value, e, money: true, detail: "paid access ended")
                    flow("net_mrr_movement", at: piece.end, -value, e, money: true, detail: "churned")
                }
                previous = (piece.end, value)
            }
        }
    }

    /// Each subscription's paid access: new where it first begins, resubscribed where it begins
    /// again after a gap (billing-retry recovery included), churned where it ends (after any
    /// grace period) with nothing following.
    mutating func activesMovement() {
        for (index, line) in lines.enumerated() {
            for piece in paying[index] { ends("actives", piece, 1) }
            for (n, interval) in line.paid.enumerated() {
                if let e = line.payingEntry(at: interval.start) {
                    flow(n == 0 ? "new_actives" : "resubscribed_actives", at: interval.start, 1, e)
                    flow("net_actives_movement", at: interval.start, 1, e, detail: n == 0 ? "new" : "resubscribed")
                }
                if let e = line.payingEntry(at: interval.end - 1) {
                    flow("churned_actives", at: interval.end, 1, e, detail: "paid access ended")
                    flow("net_actives_movement", at: interval.end, -1, e, detail: "churned")
                }
            }
        }
    }

    /// Each subscription's free trials, run together where one follows another: new where it
    /// begins, expired where it ends (whether or not a paid period follows).
    mutating func trialsMovement() {
        for line in lines {
            let pieces = line.trialPieces
            for (k, piece) in pieces.enumerated() {
                ends("trials", piece, 1)
                if k == 0 || pieces[k - 1].end != piece.start {
                    flow("new_trials", at: piece.start, 1, piece.entry)
                    flow("net_trials_movement", at: piece.start, 1, piece.entry, detail: "new")
                }
                if k + 1 == pieces.count || pieces[k + 1].start != piece.end {
                    flow("expired_trials", at: piece.end, 1, piece.entry, detail: "trial ended")
                    flow("net_trials_movement", at: piece.end, -1, piece.entry, detail: "expired")
                }
            }
        }
    }
}
