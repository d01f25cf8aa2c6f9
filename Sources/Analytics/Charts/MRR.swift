import Entitlements

extension ChartDefinition {
    /// MRR: each active paid subscription's price normalised to a month, over the time it pays,
    /// and the count of those subscriptions; ARR is twelve times MRR.
    static let mrr = ChartDefinition(
        measures: ["subscriptions", "mrr", "arr"], money: ["mrr", "arr"], stocks: ["subscriptions", "mrr", "arr"],
        followsSubscriptions: true,
        record: { $0.mrr() },
        close: { $0.settle(["subscriptions", "mrr", "arr"], at: $0.instants) })
}

/// How a ledger becomes the mrr chart's items.
extension ItemRecorder {
    /// Each active paid subscription's price normalised to a month, over the time it pays.
    mutating func mrr() {
        for pieces in paying {
            for piece in pieces {
                let e = piece.entry
                stock("subscriptions", from: piece.start, to: piece.end, 1, e)
                let m = monthly(e)
                guard let value = m.value else {
                    if !m.notes.isEmpty { stock("", from: piece.start, to: piece.end, 0, e, notes: m.notes) }
                    continue
                }
                stock("mrr", from: piece.start, to: piece.end, value, e, money: true, detail: m.detail(), notes: m.notes)
                stock("arr", from: piece.start, to: piece.end, value * 12, e, money: true, detail: m.detail())
            }
        }
    }

    /// A paid transaction's price normalised to a month in the chart's currency, why (its
    /// price per period), and the notes of a price or rate missing (then no value) or of an
    /// untaxed storefront.
    func monthly(_ e: Ledger.Entry) -> (value: Int64?, detail: () -> String, notes: [ItemNote]) {
        let (charge, notes) = charge(e)
        guard let c = charge, let (n, d, name) = Self.monthly(e.purchase) else { return (nil, { "" }, notes) }
        let (converted, missing) = convert(c.price.milliunits, c, times: n, over: d)
        return (converted, { "\(Money.text(c.price.milliunits)) \(c.price.currency) per \(name)" }, notes + missing)
    }

    /// RevenueCat's normalisation to a month, by the length of the period paid for.
    static func monthly(_ p: Purchase) -> (Int64, Int64, String)? {
        guard let start = p.purchaseDate, let end = p.expiresDate, end > start else { return nil }
        let days = (end - start) / 86_400_000
        switch days {
        case ...1: return (30, 1, "day")
        case ...4: return (10, 1, "3 days")
        case ...10: return (4, 1, "week")
        case ...20: return (2, 1, "2 weeks")
        case ...45: return (1, 1, "month")
        case ...75: return (1, 2, "2 months")
        case ...120: return (1, 3, "3 months")
        case ...240: return (1, 6, "6 months")
        default: return (1, 12, "year")
        }
    }
}
