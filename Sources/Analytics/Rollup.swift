import Entitlements
import Identifiers

/// Charts kept ahead of the question. Each holder's items (``ChartItem``, every chart, the
/// reporting currency, no filter but the environment) are snapped to UTC days and summed with
/// everyone else's (``RollupRow``); a query sums those rows instead of every transaction.
///
/// Snapping is exact for every instant a query asks about except within today: a flow by the day
/// of its instant, a stock by the days of its ends (a past day's last instant is inside
/// [at, until) exactly when its day is in [day(at), day(until))), a start-of-period stock by the
/// first day starting at or after each end, a window and a cohort by their days. A row with an
/// instant today can count or not depending on the hour, so for today the rows with a day equal to
/// today are left out and their exact items (``RollupMoment``, kept for every item with an
/// instant on or after the day it was written) are summed instead; a row whose items had begun
/// when it was written is settled, its start never in doubt.
///
/// ARR, twelve times MRR item by item, is not kept: MRR's sums are multiplied when read.
///
/// Every chart is kept twice more, split by storefront and by product (``RollupSplit``): the
/// same sums with each item's value of the dimension (its transaction's, or for a chart of
/// customers or cohorts, the customer's first), which a query grouped by it reads instead of
/// the unsplit sums (kept apart, so that a chart nobody splits reads no more rows).
///
/// Stocks are kept as their two changes (+value from the start, −value from the end) and
/// renewals at one value as one span, so a stock chart has a row per day something changes.
///
/// Pure: the caller stores rows and moments, and reads back those a query needs.
package enum Rollup {
    /// Bumped whenever what a ledger adds to the rollups changes, so stored rollups are rebuilt
    /// (7: a first-seen cohort's item is kept once, by the shortest window holding it).
    package static let format = 7

    /// Whether a query can be answered from rollups: UTC days, the reporting currency, the
    /// filters items carry (app and store, except for cohorted charts, whose cohorts and first
    /// conversions a filter can move), the groups rows are kept split by (country, product), and
    /// for the charts of time the groups items carry (app, store: a customer's or a cohort's is
    /// their first purchase's, which no item of theirs carries). Filters by product or
    /// storefront rebuild a subscription's line under the filter, which no row keeps. Other
    /// queries read the ledger.
    package static func answers(_ q: ChartQuery, reportingCurrency: String) -> Bool {
        q.zone.name == "UTC" && (q.currency ?? reportingCurrency) == reportingCurrency && q.filters.product == nil
            && q.filters.storefront == nil && (!q.chart.isCohorted || q.filters.app == nil && q.filters.store == nil)
            && (q.groupBy == nil || RollupSplit(q.groupBy) != nil
                || !q.chart.isCohorted && !q.chart.definition.followsCustomers && (q.groupBy == .app || q.groupBy == .store))
    }

    /// What one holder adds to every chart of every environment they hold purchases in, computed
    /// at `writtenAt` (epoch ms, no later than any query of them): their snapped rows, and the
    /// exact items with an instant still to come on or after that day; and the environments
    /// whose every item is in one kept group (most holders': one storefront, one product), with
    /// that group: their split rows are their unsplit rows in it, never made unless asked for
    /// (``HolderRollup/rows``), nor kept (``RollupRow/packed(_:oneGroup:)``).
    package static func holder(_ ledger: Ledger, settings: AnalyticsSettings, rates: ExchangeRates, writtenAt: Int64)
        -> HolderRollup
    {
        // The rows in the order first met (a chart's together, as packing and summing them prefer),
        // each found by its key with one lookup.
        var summed: [RollupRow] = []
        var places: [RollupRow.Key: Int] = [:]
        func add(_ value: Int64, to key: RollupRow.Key) {
            let next = summed.count
            var place = next
            Self.read(&places[key, default: next], into: &place)
            if place == next { summed.append(RollupRow(key: key, value: 0, items: 0)) }
            summed[place].value += value
            summed[place].items += 1
        }
        var moments: [RollupMoment] = []
        let today = Rollup.floorDay(writtenAt)
        // The environments of one group: their split rows are made once at the end.
        var oneGroup: [String: String] = [:]
        var split: (group: String, values: [(RollupSplit, String)])?
        for environment in ledger.environments.sorted() {
            let filters = ChartFilters(environment: environment)
            let charts = ItemRecorder.recordAll(
                ledger, filters: filters, currency: settings.reportingCurrency, rates: rates, settings: settings)
            let first = charts.lazy.flatMap(\.1).first?.group
            if let first, charts.allSatisfy({ $0.1.allSatisfy { $0.group.isExactly(first) } }) { oneGroup[environment] = first }
            let mixed = oneGroup[environment] == nil
            places.reserveCapacity(places.count + charts.reduce(0) { $0 + $1.1.count } * (mixed ? 6 : 2))
            for (chart, items) in charts {
                // ARR is twelve times MRR item by item: kept as MRR alone, and multiplied when read.
                for item in merged(chart == .mrr ? items.filter { $0.measure != "arr" } : items) {
                    forEachPiece(of: item) { piece in
                        // Each split's value of the piece's group, made again only when the group changes.
                        if mixed, !(split?.group.isExactly(piece.group) ?? false) {
                            split = (piece.group, RollupSplit.kept.map { ($0, $0.value(inKept: piece.group)) })
                        }
                        let groups = mixed ? split!.values : []
                        RollupRow.forEachKey(of: piece, chart: chart, environment: environment, writtenAt: writtenAt) {
                            key, value in
                            add(value, to: key)
                            // The same sums again in each split's row of the item's value.
                            for (split, group) in groups {
                                var key = key
                                key.split = split
                                key.group = group
                                add(value, to: key)
                            }
                        }
                        let days = RollupMoment.days(of: piece, onOrAfter: today, writtenAt: writtenAt)
                        if !days.isEmpty, Rollup.floorDay(piece.validUntil) >= today {
                            // As with rows, untaxed storefronts only for revenue: then a note's piece may say nothing.
                            var piece = piece
                            if chart != .revenue { piece.notes.removeAll(where: \.isUntaxed) }
                            guard !piece.measure.isEmpty || !piece.notes.isEmpty else { return }
                            moments.append(RollupMoment(environment: environment, chart: chart, item: piece, days: days))
                        }
                    }
                }
            }
        }
        // A measure's row that sums to nothing adds nothing (a stock's end meeting the next one's
        // start, a refund of 0); a note's rows are counts, always kept.
        summed.removeAll { $0.key.note.isEmpty && $0.value == 0 }
        return HolderRollup(kept: summed, moments: moments, oneGroup: oneGroup)
    }

    /// Reads a value through its `inout` access: a dictionary's `subscript(_:default:)` then
    /// finds or inserts its key with one lookup.
    private static func read<T>(_ value: inout T, into out: inout T) { out = value }

    /// The split rows of the environments of one group (`oneGroup`, each's kept group): each of
    /// their unsplit rows again, split by each dimension into that group.
    static func split(_ rows: [RollupRow], oneGroup: [String: String]) -> [RollupRow] {
        var out: [RollupRow] = []
        out.reserveCapacity(rows.count * RollupSplit.kept.count)
        var groups: (environment: String, values: [(RollupSplit, String)])?
        for row in rows {
            guard row.key.split == .none, let group = oneGroup[row.key.environment] else { continue }
            if groups?.environment != row.key.environment {
                groups = (row.key.environment, RollupSplit.kept.map { ($0, $0.value(inKept: group)) })
            }
            for (split, value) in groups!.values {
                var row = row
                row.key.split = split
                row.key.group = value
                out.append(row)
            }
        }
        return out
    }

    /// Adds to a sum in place: through a dictionary's subscript, one lookup of its key (a row's
    /// key is seven strings to hash) where `+=` on each part would take two.
    package static func add(_ value: Int64, items: Int64, to sum: inout (value: Int64, items: Int64)) {
        sum.value += value
        sum.items += items
    }

    /// Stocks that follow on from one another with the same value (a subscription's renewals)
    /// as one span: they count at the same instants, and the rollups keep no more than counts.
    /// Items with notes stay apart, since a note is counted once per item.
    static func merged(_ items: [ChartItem]) -> [ChartItem] {
        func isSpan(_ item: ChartItem) -> Bool { item.kind != .flow && item.notes.isEmpty && !item.measure.isEmpty }
        // The spans by index: most charts of a holder have one at most, and an item is large to move.
        var spans = items.indices.filter { isSpan(items[$0]) }
        guard spans.count > 1 else { return items }
        items.withUnsafeBufferPointer { items in
            spans.sort { i, j in
                let (a, b) = (items[i], items[j])
                if !a.measure.isExactly(b.measure) { return Identifier(a.measure) < Identifier(b.measure) }
                if a.kind != b.kind { return a.kind.rawValue < b.kind.rawValue }
                if a.cohort != b.cohort { return a.cohort ?? .min < b.cohort ?? .min }
                if a.value != b.value { return a.value < b.value }
                if !a.bundleID.isExactly(b.bundleID) { return Identifier(a.bundleID) < Identifier(b.bundleID) }
                if !a.group.isExactly(b.group) { return Identifier(a.group) < Identifier(b.group) }
                return a.at < b.at
            }
        }
        var out = items.filter { !isSpan($0) }
        var current = items[spans[0]]
        for n in spans.dropFirst() {
            let next = items[n]
            if next.measure.isExactly(current.measure), next.kind == current.kind, next.cohort == current.cohort,
                next.value == current.value, next.bundleID.isExactly(current.bundleID), next.store == current.store,
                next.group.isExactly(current.group),
                next.validFrom == current.validFrom, next.validUntil == current.validUntil, next.at == current.until
            {
                current.until = next.until
            } else {
                out.append(current)
                current = next
            }
        }
        out.append(current)
        return out
    }

    /// An item as the rollups keep it. A stock is two open-ended changes, +value from its start
    /// and −value from its end, so that a subscription paying month after month sums to a row
    /// per day a change happens, not one per span; its notes, counted only while it is within a
    /// query's periods, keep the whole span. A flow is itself. Each piece goes to `body` (an
    /// array of them was an allocation an item).
    static func forEachPiece(of item: ChartItem, _ body: (ChartItem) -> Void) {
        guard item.kind != .flow, !item.measure.isEmpty else { return body(item) }
        var start = item
        start.until = .max
        start.notes = []
        body(start)
        if item.until != .max {
            var end = start
            end.at = item.until
            end.value = -item.value
            body(end)
        }
        if !item.notes.isEmpty {
            var notes = item
            notes.measure = ""
            notes.value = 0
            body(notes)
        }
    }

    /// The query's chart from the rows of its environment and chart (those split by its
    /// ``ChartQuery/groupBy`` when rows are kept split by it, ``RollupSplit``, else the unsplit),
    /// and the items of its moments of today (the day holding `q.now`) of the same. The caller checked
    /// ``answers(_:reportingCurrency:)``.
    package static func answer(_ q: ChartQuery, currency: String, rows: [RollupRow], today todays: [ChartItem]?)
        throws(ChartError) -> ChartAnswer
    {
        var running = try ChartSum(q, currency: currency).running()
        let today = CivilTime.split(q.now).0
        var batch: [ChartItem] = []
        batch.reserveCapacity(1024)
        let window = q.cohortWindow
        // Split rows (the caller read those of the query's split alone) are in their group already.
        let split = RollupSplit(q.groupBy)
        // Without today's moments (``needsMoments(_:rows:)`` said the rows are exact), the rows of today too.
        for row in rows where row.key.admitted(by: q.filters) && (todays == nil || !row.key.touches(today)) {
            var item = row.item
            if let (measure, rowGrain) = RollupRow.grained(row.key.measure) {
                // Paying cohorts are kept by the day, week and month of the cohort: the query's own.
                guard rowGrain == q.resolution else { continue }
                item.measure = measure
            } else if let (measure, rowWindow) = RollupRow.windowed(row.key.measure) {
                // First-seen cohorts' conversions and revenue are kept by the shortest window holding
                // them: those the query's window holds count.
                guard window?.includes(rowWindow) ?? false else { continue }
                item.measure = measure
                item.isMoney = Book.moneyMeasures.contains(measure)
            }
            if split == nil { item.group = Self.group(of: item, by: q.groupBy) }
            batch.append(item)
            if batch.count == 1024 {
                running.add(batch)
                batch.removeAll(keepingCapacity: true)
            }
        }
        running.add(batch)
        let todays = (todays ?? []).compactMap { item -> ChartItem? in
            var item = item
            item.group = Self.group(of: item, by: q.groupBy)
            guard let (measure, itemWindow) = RollupRow.windowed(item.measure) else { return item }
            guard window?.includes(itemWindow) ?? false else { return nil }
            item.measure = measure
            return item
        }
        if q.filters.app == nil && q.filters.store == nil {
            running.add(todays)
        } else {
            running.add(todays.filter { $0.admitted(by: q.filters) })
        }
        var answer = running.answer()
        if q.chart == .mrr {
            Self.annualise(&answer.figures)
            for g in answer.groups.indices { Self.annualise(&answer.groups[g].figures) }
        }
        answer.fromRollups = true
        return answer
    }

    /// Whether the query needs today's moments besides `rows` (its chart's, as read): when an
    /// instant of it is today, where a row's day does not say whether an item counts yet; or when
    /// a row touching today is of an item that `now` decides whatever the period: one that becomes
    /// valid or stops being valid today, or a cohort's (counted in its cohort's period once its
    /// own instant, today, has come). A query that ends before today without such rows (a
    /// drill-down's figure of a past day of the charts of time, most often) is exact from its
    /// rows alone, today's included, and reads no moments.
    package static func needsMoments(_ q: ChartQuery, rows: [RollupRow]) throws(ChartError) -> Bool {
        let today = floorDay(q.now)
        guard try lastDay(of: q) < today else { return true }
        return rows.contains { row in
            row.key.touches(today)
                && (row.key.cohortDay != RollupRow.noCohort || row.key.validFromDay == today || row.key.validUntilDay == today)
        }
    }

    /// ARR from MRR's sums: twelve times, period by period.
    static func annualise(_ figures: inout Figures) {
        guard let mrr = figures.column("mrr") else { return }
        let arr = figures.ensureColumn("arr")
        for i in 0..<figures.periods {
            if case .money(let m)? = figures[i, mrr] { figures[i, arr] = .money(12 * m) }
        }
    }

    /// A kept item's group: the app or store it carries, or its storefront's or product's, kept
    /// in its group (the groups rollups answer).
    static func group(of item: ChartItem, by dimension: ChartDimension?) -> String {
        switch dimension {
        case .app?: item.bundleID
        case .store?: item.store.rawValue
        case .country?: RollupSplit.country.value(inKept: item.group)
        case .product?: RollupSplit.product.value(inKept: item.group)
        default: ""
        }
    }

    /// The last day whose rows can count in the query: every item counts only at or after its
    /// start, and the query's last instant is its last period's end or now, whichever is first.
    /// A query of a past range reads none of the rows since; but a cohort's item counts in its
    /// cohort's period whenever it came, up to now (a conversion this week of last month's
    /// trial), so a cohorted chart reads them up to today.
    package static func lastDay(of q: ChartQuery) throws(ChartError) -> Int64 {
        if q.chart.isCohorted { return floorDay(q.now) }
        let grid = try PeriodGrid(q)
        let end = min(grid.periods.last?.end ?? q.to, q.now + 1)
        return floorDay(end - 1)
    }

    /// The first day whose cohorts can count in the query: a cohort's items count only in its
    /// cohort's period, and no period starts before the first. A cohort chart of the last year
    /// reads the rows of the cohorts of that year, not of every cohort before it (rows of no
    /// cohort are read whatever their day). ``RollupRow/noCohort`` for a chart of no cohorts.
    package static func firstCohortDay(of q: ChartQuery) throws(ChartError) -> Int64 {
        guard q.chart.isCohorted else { return RollupRow.noCohort }
        let grid = try PeriodGrid(q)
        return floorDay(grid.periods.first?.start ?? q.from)
    }

    /// The measure whose rows a figure of `measure` is summed from: `paying` for `paying_N`,
    /// `mrr` for `arr` (kept as MRR alone), else itself.
    package static func keptMeasure(of measure: String) -> String {
        measure.hasPrefix("paying_") ? "paying" : measure == "arr" ? "mrr" : measure
    }

    /// The measures whose rows a query's figures are summed from; nil for every row of its chart.
    /// A figure of `measure` alone (a drill-down's): its kept measure's rows, per grain of cohort
    /// and per window the query's holds.
    /// A cohort chart: its notes, customers, revenue and the paying spans kept by its own grain of
    /// cohort (by day, a third of its rows; by month, a fifth).
    package static func keptMeasures(for q: ChartQuery, measure: String? = nil) -> [String]? {
        if let measure {
            let kept = keptMeasure(of: measure)
            let windows = q.cohortWindow.map { w in ChartWindow.allCases.filter(w.includes).map { kept + $0.suffix } }
            return [kept, kept + "/week", kept + "/month"] + (windows ?? [])
        }
        guard let base = q.chart.definition.cohortBase else { return nil }
        return ["", base] + (q.chart.measures.contains("revenue") ? ["revenue"] : [])
            + [q.resolution == .day ? "paying" : "paying/" + q.resolution.rawValue]
    }

    /// The day (since 1970-01-01) holding `t`; the unbounded stay unbounded.
    static func floorDay(_ t: Int64) -> Int64 {
        t == .min || t == .max ? t : CivilTime.split(t).0
    }

    /// The first day starting at or after `t`.
    static func ceilingDay(_ t: Int64) -> Int64 {
        guard t != .min, t != .max else { return t }
        let (day, ms) = CivilTime.split(t)
        return ms == 0 ? day : day + 1
    }

    /// The instant `day` starts.
    static func start(_ day: Int64) -> Int64 {
        day == .min || day == .max ? day : day * 86_400_000
    }
}
