import Entitlements
import Identifiers

extension ChartDefinition {
    /// Cohorts: customers by the period of their first paid subscription period, their net revenue
    /// and realised LTV (revenue ÷ customers), and per period on how many still pay (`paying_N`)
    /// and their share (`retention_N`).
    static let cohorts = ChartDefinition(
        measures: ["customers", "revenue", "ltv"], money: ["revenue", "ltv"],
        parts: { measure in
            if measure == "ltv" { return ["revenue", "customers"] }
            guard measure.hasPrefix("retention_") else { return nil }
            return ["paying_" + measure.dropFirst("retention_".count), "customers"]
        },
        cohortBase: "customers", followsSubscriptions: true, record: { $0.cohorts() }, close: { $0.settleCohorts() })
}

/// How a ledger becomes the cohorts chart's items.
extension ItemRecorder {
    /// Customers by the instant of their first paid subscription period: that instant, the time
    /// they pay (through any of their subscriptions), and their net revenue.
    mutating func cohorts() {
        var linesByUser: [Identifier: [Int]] = [:]
        for (n, line) in lines.enumerated() { linesByUser[Identifier(line.appUserID), default: []].append(n) }
        var firstPaid: [Identifier: Ledger.Entry] = [:]
        for e in admitted where e.purchase.isPaidPeriod && e.purchase.purchaseDate != nil {
            if firstPaid[Identifier(e.appUserID)] == nil { firstPaid[Identifier(e.appUserID)] = e }
        }
        // A customer is in the group of their first paid period, whatever the rest was.
        defer { personGroup = nil }
        for (user, e) in firstPaid.sorted(by: { $0.key < $1.key }) {
            personGroup = group(ofPerson: e.value(of:))
            let cohort = e.purchase.purchaseDate!
            flow("customers", at: cohort, 1, e, detail: "first paid period", cohort: cohort)
            let userLines = (linesByUser[user] ?? []).map { lines[$0] }
            let perLine = (linesByUser[user] ?? []).map { paying[$0] }
            // Paying through any subscription: the first of theirs paying at each instant.
            let pieces =
                perLine.count == 1
                ? perLine[0]
                : SubscriptionLine.pieces(at: perLine.flatMap { $0.flatMap { [$0.start, $0.end] } }) { t in
                    userLines.lazy.compactMap { $0.payingEntry(at: t) }.first
                }
            for piece in pieces { stock("paying", from: piece.start, to: piece.end, 1, piece.entry, cohort: cohort) }
        }
        for e in admitted {
            guard let first = firstPaid[Identifier(e.appUserID)], let cohort = first.purchase.purchaseDate else { continue }
            personGroup = group(ofPerson: first.value(of:))
            revenue("revenue", of: e, cohort: cohort)
        }
    }

    /// A sale's net revenue (its price less any refund, in the chart's currency) for a cohort, at
    /// the sale; or, unpriced, the notes saying why (an item of no measure but its window's
    /// suffix, when `measure` has one: `revenue/7d`'s notes are `/7d`'s, counted for that window).
    mutating func revenue(_ measure: String, of e: Ledger.Entry, cohort: Int64) {
        guard let at = e.purchase.purchaseDate else { return }
        let notesOnly = measure.utf8.firstIndex(of: UInt8(ascii: "/")).map { String(measure[$0...]) } ?? ""
        let (charge, notes) = charge(e)
        guard let c = charge else {
            if !notes.isEmpty { flow(notesOnly, at: at, 0, e, cohort: cohort, notes: notes) }
            return
        }
        let (gross, missing) = convert(c.gross, c)
        guard let gross, let refunds = convert(c.refunds, c).0 else {
            flow(notesOnly, at: at, 0, e, cohort: cohort, notes: notes + missing)
            return
        }
        flow(measure, at: at, gross - refunds, e, money: true, detail: c.refundKind, cohort: cohort, notes: notes)
    }
}
