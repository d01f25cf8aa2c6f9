import Identifiers

/// Where a drill-down finds who makes a figure (Docs/analytics.md#every-number-explains-itself). A holder is
/// marked on the UTC days their flows happen, the UTC months their stocks run through and the
/// days of their cohorts, so that the holders of one figure are read from an index, a page at a
/// time, rather than found by reading every transaction.
///
/// Marks are derived from a holder's ``RollupRow``s, so the keeper knows which to take away when
/// the rows change. They may name a holder who adds nothing to a figure (a drill-down reads their
/// ledger and finds so); they never miss one who adds something.
package struct RollupMark: Sendable, Hashable, Comparable {
    package enum Family: String, Sendable, CaseIterable {
        /// A flow of no cohort on `day`.
        case flow = "f"
        /// A stock running at some instant of the month whose first day is `day`.
        case stock = "s"
        /// An item of the cohort of `day`.
        case cohort = "c"
    }

    package var environment: String
    package var family: Family
    /// Days since 1970-01-01, UTC.
    package var day: Int64

    package init(environment: String, family: Family, day: Int64) {
        self.environment = environment
        self.family = family
        self.day = day
    }

    package static func < (a: RollupMark, b: RollupMark) -> Bool {
        (a.environment, a.family.rawValue, a.day) < (b.environment, b.family.rawValue, b.day)
    }

    /// A holder's marks from their rows: a flow's day, a cohort's day, and every month from a
    /// stock's first day to its last (the two changes a stock is kept as, matched up again by
    /// running their values per measure: a stock runs while the sum is not zero). A row's days
    /// are its items' (floor days; ceiling days for a start-of-period stock, whose instants are
    /// day starts), so any instant an item counts at lies on a marked day or in a marked month.
    /// The rows only of notes, the per-grain copies of cohorts' paying spans and the split
    /// copies of every row add none.
    package static func marks(of rows: [RollupRow]) -> Set<RollupMark> {
        // A holder's rows name one environment or two: each one's days, found without hashing
        // a text, and each day inserted once.
        var environments: [(name: String, flows: [Int64], cohorts: [Int64], months: [Int64])] = []
        func environment(_ name: String) -> Int {
            if let e = environments.firstIndex(where: { $0.name.isExactly(name) }) { return e }
            environments.append((name, [], [], []))
            return environments.count - 1
        }
        // Each stock line's changes: a line is an environment's measure of one app and store,
        // told apart by their bytes (a row's first of them, by its index).
        var lines: [Int] = []
        var changes: [(line: Int, day: Int64, value: Int64)] = []
        for (i, row) in rows.enumerated() where !row.key.measure.isEmpty && row.key.split == .none {
            let k = row.key
            if k.cohortDay != RollupRow.noCohort {
                if RollupRow.grained(k.measure)?.1 ?? .day == .day {
                    environments[environment(k.environment)].cohorts.append(k.cohortDay)
                }
            } else if k.kind == .flow {
                if k.atDay != .min, k.atDay != .max { environments[environment(k.environment)].flows.append(k.atDay) }
            } else {
                let line =
                    lines.firstIndex { first in
                        let l = rows[first].key
                        return l.chart == k.chart && l.kind == k.kind && l.measure.isExactly(k.measure)
                            && l.bundleID.isExactly(k.bundleID) && l.store.isExactly(k.store)
                            && l.environment.isExactly(k.environment)
                    }
                    ?? {
                        lines.append(i)
                        return lines.count - 1
                    }()
                changes.append((line, k.atDay, row.value))
            }
        }
        // A line runs from the day its sum leaves zero to the day it comes back.
        changes.sort { ($0.line, $0.day) < ($1.line, $1.day) }
        var (running, from): (Int64, Int64?) = (0, nil)
        for (n, change) in changes.enumerated() {
            running += change.value
            let last = n + 1 == changes.count || changes[n + 1].line != change.line
            guard last || changes[n + 1].day != change.day else { continue }  // the day's whole change first
            if running != 0, from == nil {
                from = change.day
            } else if running == 0, let first = from {
                months(first, change.day, into: &environments[environment(rows[lines[change.line]].key.environment)].months)
                from = nil
            }
            if last {
                // Every stock the ledger records ends (a paid or trial period always has an end);
                // were one not to, its first month would still be marked.
                if let first = from {
                    months(first, first, into: &environments[environment(rows[lines[change.line]].key.environment)].months)
                }
                (running, from) = (0, nil)
            }
        }
        var marks: Set<RollupMark> = []
        for e in environments {
            for (family, days) in [(Family.flow, e.flows), (.cohort, e.cohorts), (.stock, e.months)] {
                var last: Int64?
                for day in days.sorted() where day != last {
                    marks.insert(RollupMark(environment: e.name, family: family, day: day))
                    last = day
                }
            }
        }
        return marks
    }

    /// The first days of the months from `first`'s to `last`'s.
    private static func months(_ first: Int64, _ last: Int64, into months: inout [Int64]) {
        guard first != .min, last != .max else { return }
        var month = PeriodGrid.align(first, .month)
        while month <= last {
            months.append(month)
            month = PeriodGrid.advance(month, .month)
        }
    }
}

/// Which marks hold the contributors to one figure, and on which of them each contribution is
/// found: every contribution on exactly one, so that a drill-down reading marks in order, a
/// page at a time, lists each once.
package struct DrillTarget: Sendable, Equatable {
    package var family: RollupMark.Family
    /// The UTC days whose marks to read.
    package var days: ClosedRange<Int64>

    /// The day of the mark an item of the figure is found on.
    package func markDay(of item: ChartItem) -> Int64 {
        switch family {
        case .cohort: Rollup.floorDay(item.cohort ?? item.at)
        case .stock: days.lowerBound
        case .flow: Rollup.floorDay(item.at)
        }
    }
}

extension ChartSum {
    /// Where the contributors to one figure are marked (``RollupMark``); nil when nothing can
    /// contribute yet (a stock of a period still to begin). Errors as ``drilling(period:measure:)``.
    package func target(period: String, measure: String) throws(ChartError) -> DrillTarget? {
        _ = try drilling(period: period, measure: measure)
        let p = grid.periods.first { $0.label == period }!
        let days = Rollup.floorDay(p.start)...Rollup.floorDay(p.end - 1)
        if q.chart.isCohorted { return DrillTarget(family: .cohort, days: days) }
        if let kind = q.chart.stockKind(of: measure) {
            guard p.start <= q.now else { return nil }
            let instant = kind == .stockAtStart ? p.start : min(p.end, q.now + 1) - 1
            let month = PeriodGrid.align(Rollup.floorDay(instant), .month)
            return DrillTarget(family: .stock, days: month...month)
        }
        return DrillTarget(family: .flow, days: days)
    }
}
