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
        var marks: Set<RollupMark> = []
        struct Line: Hashable {
            var environment: String
            var chart: Chart
            var measure: String
            var kind: ChartItem.Kind
            var bundleID: String
            var store: String
        }
        var changes: [Line: [Int64: Int64]] = [:]
        for row in rows where !row.key.measure.isEmpty && row.key.split == .none {
            let k = row.key
            if k.cohortDay != RollupRow.noCohort {
                if RollupRow.grained(k.measure)?.1 ?? .day == .day {
                    marks.insert(RollupMark(environment: k.environment, family: .cohort, day: k.cohortDay))
                }
            } else if k.kind == .flow {
                if k.atDay != .min, k.atDay != .max {
                    marks.insert(RollupMark(environment: k.environment, family: .flow, day: k.atDay))
                }
            } else {
                let line = Line(
                    environment: k.environment, chart: k.chart, measure: k.measure, kind: k.kind, bundleID: k.bundleID,
                    store: k.store)
                changes[line, default: [:]][k.atDay, default: 0] += row.value
            }
        }
        for (line, byDay) in changes {
            var running: Int64 = 0
            var from: Int64?
            for day in byDay.keys.sorted() {
                running += byDay[day]!
                if running != 0, from == nil {
                    from = day
                } else if running == 0, let first = from {
                    months(first, day, line.environment, into: &marks)
                    from = nil
                }
            }
            // Every stock the ledger records ends (a paid or trial period always has an end);
            // were one not to, its first month would still be marked.
            if let first = from { months(first, first, line.environment, into: &marks) }
        }
        return marks
    }

    private static func months(_ first: Int64, _ last: Int64, _ environment: String, into marks: inout Set<RollupMark>) {
        guard first != .min, last != .max else { return }
        var month = PeriodGrid.align(first, .month)
        while month <= last {
            marks.insert(RollupMark(environment: environment, family: .stock, day: month))
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
