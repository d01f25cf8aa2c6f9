import Entitlements

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
/// Stocks are kept as their two changes (+value from the start, −value from the end) and
/// renewals at one value as one span, so a stock chart has a row per day something changes.
///
/// Pure: the caller stores rows and moments, and reads back those a query needs.
package enum Rollup {
    /// Bumped whenever what a ledger adds to the rollups changes, so stored rollups are rebuilt.
    package static let format = 3

    /// Whether a query can be answered from rollups: UTC days, the reporting currency, and the
    /// filters items carry (app and store, except for cohorted charts, whose cohorts and first
    /// conversions a filter can move). Other queries read the ledger.
    package static func answers(_ q: ChartQuery, reportingCurrency: String) -> Bool {
        q.zone.name == "UTC" && (q.currency ?? reportingCurrency) == reportingCurrency && q.filters.product == nil
            && q.filters.storefront == nil && (!q.chart.isCohorted || q.filters.app == nil && q.filters.store == nil)
    }

    /// What one holder adds to every chart of every environment they hold purchases in, computed
    /// at `writtenAt` (epoch ms, no later than any query of them): their snapped rows, and the
    /// exact items with an instant still to come on or after that day.
    package static func holder(_ ledger: Ledger, settings: AnalyticsSettings, rates: ExchangeRates, writtenAt: Int64) -> (
        rows: [RollupRow], moments: [RollupMoment]
    ) {
        var sums: [RollupRow.Key: (value: Int64, items: Int64)] = [:]
        var moments: [RollupMoment] = []
        let today = Rollup.floorDay(writtenAt)
        for environment in ledger.environments.sorted() {
            let filters = ChartFilters(environment: environment)
            let charts = ItemRecorder.recordAll(
                ledger, filters: filters, currency: settings.reportingCurrency, rates: rates, settings: settings)
            for (chart, items) in charts {
                // ARR is twelve times MRR item by item: kept as MRR alone, and multiplied when read.
                for item in merged(chart == .mrr ? items.filter { $0.measure != "arr" } : items) {
                    for piece in pieces(of: item) {
                        for (key, value) in RollupRow.keys(
                            of: piece, chart: chart, environment: environment, writtenAt: writtenAt)
                        {
                            add(value, items: 1, to: &sums[key, default: (0, 0)])
                        }
                        let days = RollupMoment.days(of: piece, onOrAfter: today, writtenAt: writtenAt)
                        if !days.isEmpty, Rollup.floorDay(piece.validUntil) >= today {
                            // As with rows, untaxed storefronts only for revenue: then a note's piece may say nothing.
                            var piece = piece
                            if chart != .revenue { piece.notes.removeAll(where: \.isUntaxed) }
                            guard !piece.measure.isEmpty || !piece.notes.isEmpty else { continue }
                            moments.append(RollupMoment(environment: environment, chart: chart, item: piece, days: days))
                        }
                    }
                }
            }
        }
        // A measure's row that sums to nothing adds nothing (a stock's end meeting the next one's
        // start, a refund of 0); a note's rows are counts, always kept.
        let rows = sums.compactMap { key, sum in
            key.note.isEmpty && sum.value == 0 ? nil : RollupRow(key: key, value: sum.value, items: sum.items)
        }
        return (rows, moments)
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
        var spans: [ChartItem] = []
        var flows: [ChartItem] = []
        for item in items {
            if item.kind == .flow || !item.notes.isEmpty || item.measure.isEmpty {
                flows.append(item)
            } else {
                spans.append(item)
            }
        }
        guard spans.count > 1 else { return items }
        spans.sort { a, b in
            (a.measure, a.kind.rawValue, a.cohort ?? .min, a.value, a.bundleID, a.at)
                < (b.measure, b.kind.rawValue, b.cohort ?? .min, b.value, b.bundleID, b.at)
        }
        var out = flows
        var current = spans[0]
        for next in spans.dropFirst() {
            if next.measure == current.measure, next.kind == current.kind, next.cohort == current.cohort,
                next.value == current.value, next.bundleID == current.bundleID, next.store == current.store,
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
    /// query's periods, keep the whole span. A flow is itself.
    static func pieces(of item: ChartItem) -> [ChartItem] {
        guard item.kind != .flow, !item.measure.isEmpty else { return [item] }
        var start = item
        start.until = .max
        start.notes = []
        var pieces = [start]
        if item.until != .max {
            var end = start
            end.at = item.until
            end.value = -item.value
            pieces.append(end)
        }
        if !item.notes.isEmpty {
            var notes = item
            notes.measure = ""
            notes.value = 0
            pieces.append(notes)
        }
        return pieces
    }

    /// The query's chart from the rows of its environment and chart, and the items of its moments
    /// of today (the day holding `q.now`) of the same. The caller checked
    /// ``answers(_:reportingCurrency:)``.
    package static func answer(_ q: ChartQuery, currency: String, rows: [RollupRow], today todays: [ChartItem])
        throws(ChartError) -> ChartAnswer
    {
        var running = try ChartSum(q, currency: currency).running()
        let today = CivilTime.split(q.now).0
        var batch: [ChartItem] = []
        batch.reserveCapacity(1024)
        let window = q.cohortWindow
        for row in rows where row.key.admitted(by: q.filters) && !row.key.touches(today) {
            var item = row.item
            if let (measure, rowGrain) = RollupRow.grained(row.key.measure) {
                // Paying cohorts are kept by the day, week and month of the cohort: the query's own.
                guard rowGrain == q.resolution else { continue }
                item.measure = measure
            } else if let (measure, rowWindow) = RollupRow.windowed(row.key.measure) {
                // First-seen cohorts' conversions and revenue are kept per window: the query's own.
                guard rowWindow == window else { continue }
                item.measure = measure
                item.isMoney = Book.moneyMeasures.contains(measure)
            }
            batch.append(item)
            if batch.count == 1024 {
                running.add(batch)
                batch.removeAll(keepingCapacity: true)
            }
        }
        running.add(batch)
        let todays = todays.compactMap { item -> ChartItem? in
            guard let (measure, itemWindow) = RollupRow.windowed(item.measure) else { return item }
            guard itemWindow == window else { return nil }
            var item = item
            item.measure = measure
            return item
        }
        if q.filters.app == nil && q.filters.store == nil {
            running.add(todays)
        } else {
            running.add(todays.filter { $0.admitted(by: q.filters) })
        }
        var answer = running.answer()
        if q.chart == .mrr, let mrr = answer.figures.column("mrr") {
            let arr = answer.figures.ensureColumn("arr")
            for i in 0..<answer.figures.periods {
                if case .money(let m)? = answer.figures[i, mrr] { answer.figures[i, arr] = .money(12 * m) }
            }
        }
        answer.fromRollups = true
        return answer
    }

    /// The last day whose rows can count in the query: every item counts only at or after its
    /// start, and the query's last instant is its last period's end or now, whichever is first.
    /// A query of a past range reads none of the rows since.
    package static func lastDay(of q: ChartQuery) throws(ChartError) -> Int64 {
        let grid = try PeriodGrid(q)
        let end = min(grid.periods.last?.end ?? q.to, q.now + 1)
        return floorDay(end - 1)
    }

    /// The measure whose rows a figure of `measure` is summed from: `paying` for `paying_N`,
    /// `mrr` for `arr` (kept as MRR alone), else itself.
    package static func keptMeasure(of measure: String) -> String {
        measure.hasPrefix("paying_") ? "paying" : measure == "arr" ? "mrr" : measure
    }

    /// The measures whose rows a query's figures are summed from; nil for every row of its chart.
    /// A figure of `measure` alone (a drill-down's): its kept measure's rows, per grain of cohort.
    /// A cohort chart: its notes, customers, revenue and the paying spans kept by its own grain of
    /// cohort (by day, a third of its rows; by month, a fifth).
    package static func keptMeasures(for q: ChartQuery, measure: String? = nil) -> [String]? {
        if let measure {
            let kept = keptMeasure(of: measure)
            return [kept, kept + "/week", kept + "/month"] + (q.cohortWindow.map { [kept + "/" + $0.rawValue] } ?? [])
        }
        guard let base = q.chart.definition.cohortBase else { return nil }
        return ["", base] + (q.chart.measures.contains("revenue") ? ["revenue"] : [])
            + [q.resolution == .day ? "paying" : "paying/" + q.resolution.rawValue]
    }

    /// Rows as differences: what `new` adds to the sums once `old` is taken away (rows whose value
    /// and items both net to zero left out), in no particular order.
    package static func difference(from old: [RollupRow], to new: [RollupRow]) -> [RollupRow] {
        if old.isEmpty { return new }
        var sums: [RollupRow.Key: (value: Int64, items: Int64)] = [:]
        for (rows, sign) in [(old, Int64(-1)), (new, 1)] {
            for row in rows {
                sums[row.key, default: (0, 0)].value += sign * row.value
                sums[row.key, default: (0, 0)].items += sign * row.items
            }
        }
        return sums.compactMap { key, sum in
            sum.value == 0 && sum.items == 0 ? nil : RollupRow(key: key, value: sum.value, items: sum.items)
        }
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

/// Items of one chart that have the same days, summed: what the rollups store per day.
package struct RollupRow: Sendable, Equatable {
    package struct Key: Sendable, Hashable, Comparable {
        package var environment: String
        package var chart: Chart
        /// Empty for a note's row.
        package var measure: String
        package var kind: ChartItem.Kind
        /// Its items had begun when the row was written: `atDay` is then never in doubt.
        package var settled: Bool
        package var bundleID: String
        package var store: String
        /// ``ItemNote`` as text (``RollupRow/noteText(_:)``), empty for none.
        package var note: String
        /// Days since 1970-01-01: floor days, ceiling days for a start-of-period stock's ends.
        package var atDay: Int64
        package var untilDay: Int64
        package var validFromDay: Int64
        package var validUntilDay: Int64
        /// ``RollupRow/noCohort`` when the item has none.
        package var cohortDay: Int64

        package init(
            environment: String, chart: Chart, measure: String, kind: ChartItem.Kind, settled: Bool = false,
            bundleID: String, store: String, note: String, atDay: Int64, untilDay: Int64, validFromDay: Int64,
            validUntilDay: Int64, cohortDay: Int64
        ) {
            self.environment = environment
            self.chart = chart
            self.measure = measure
            self.kind = kind
            self.settled = settled
            self.bundleID = bundleID
            self.store = store
            self.note = note
            self.atDay = atDay
            self.untilDay = untilDay
            self.validFromDay = validFromDay
            self.validUntilDay = validUntilDay
            self.cohortDay = cohortDay
        }

        /// By the fields that tell one holder's rows apart (the environment, the app, the store
        /// and the note rarely do); equality still compares every field.
        package func hash(into hasher: inout Hasher) {
            hasher.combine(chart)
            hasher.combine(measure)
            hasher.combine(kind)
            hasher.combine(settled)
            hasher.combine(atDay)
            hasher.combine(untilDay)
            hasher.combine(validFromDay)
            hasher.combine(validUntilDay)
            hasher.combine(cohortDay)
        }

        package static func < (a: Key, b: Key) -> Bool {
            if a.environment != b.environment { return a.environment < b.environment }
            if a.chart != b.chart { return a.chart.rawValue < b.chart.rawValue }
            if a.measure != b.measure { return a.measure < b.measure }
            if a.kind != b.kind { return a.kind.rawValue < b.kind.rawValue }
            if a.settled != b.settled { return !a.settled }
            if a.bundleID != b.bundleID { return a.bundleID < b.bundleID }
            if a.store != b.store { return a.store < b.store }
            if a.note != b.note { return a.note < b.note }
            return (a.atDay, a.untilDay, a.validFromDay, a.validUntilDay, a.cohortDay)
                < (b.atDay, b.untilDay, b.validFromDay, b.validUntilDay, b.cohortDay)
        }

        /// Whether one of its days is `day`: then whether it counts depends on the time of day.
        /// A start-of-period stock counts at day starts only, which its ceiling days decide exactly.
        func touches(_ day: Int64) -> Bool {
            if kind == .stockAtStart { return false }
            return atDay == day && !settled || (kind == .stock && untilDay == day) || validFromDay == day || validUntilDay == day
                || cohortDay == day
        }

        func admitted(by filters: ChartFilters) -> Bool {
            (filters.app.map { $0 == bundleID } ?? true) && (filters.store.map { $0.rawValue == store } ?? true)
        }
    }

    package var key: Key
    /// The items' values summed (milliunits for money).
    package var value: Int64
    /// How many items were summed: a note is reported that many times; a row is gone at zero.
    package var items: Int64

    package init(key: Key, value: Int64, items: Int64) {
        self.key = key
        self.value = value
        self.items = items
    }

    package static let noCohort = Int64.min

    /// An item's rows: its measure's, and one per note (value 0, so that the note is counted
    /// exactly when the item is). What can only have happened by any later query, the rows
    /// written at `writtenAt` need not date: a window's start or a cohort's sale before that
    /// day is "long ago", and an item whose window ended before it has none; an item that had
    /// begun by then is `settled` (its start never depends on the hour). A cohort's paying span
    /// has a row per grain of cohort (day, week, month), so that a query by month sums a row per
    /// cohort month and day something changed, not per cohort day.
    static func keys(of item: ChartItem, chart: Chart, environment: String, writtenAt: Int64) -> [(Key, Int64)] {
        let written = Rollup.floorDay(writtenAt)
        let validUntilDay = Rollup.floorDay(item.validUntil)
        guard validUntilDay >= written else { return [] }
        let start = item.kind == .stockAtStart
        var atDay = start ? Rollup.ceilingDay(item.at) : Rollup.floorDay(item.at)
        if item.cohort != nil, item.kind == .flow, atDay < written { atDay = .min }
        let validFromDay = Rollup.floorDay(item.validFrom)
        func key(_ measure: String, _ note: String, cohortDay: Int64) -> Key {
            Key(
                environment: environment, chart: chart, measure: measure, kind: item.kind,
                settled: !start && item.at <= writtenAt, bundleID: item.bundleID, store: item.store.rawValue, note: note,
                atDay: atDay,
                untilDay: item.kind == .flow
                    ? atDay : start ? Rollup.ceilingDay(item.until) : Rollup.floorDay(item.until),
                validFromDay: validFromDay < written ? .min : validFromDay, validUntilDay: validUntilDay,
                cohortDay: cohortDay)
        }
        let cohortDay = item.cohort.map(Rollup.floorDay) ?? noCohort
        var keys: [(Key, Int64)] = []
        // An item of notes alone may name its window (`/7d`): its notes are that window's.
        let notesOnly = item.measure.hasPrefix("/")
        if !item.measure.isEmpty && !notesOnly {
            if item.cohort != nil, item.kind == .stock {
                for grain in Resolution.allCases {
                    let day = PeriodGrid.align(cohortDay, grain)
                    keys.append(
                        (key(grain == .day ? item.measure : item.measure + "/" + grain.rawValue, "", cohortDay: day), item.value))
                }
            } else {
                keys.append((key(item.measure, "", cohortDay: cohortDay), item.value))
            }
        }
        // Untaxed storefronts are reported by the revenue chart alone.
        for note in item.notes where chart == .revenue || !note.isUntaxed {
            keys.append((key(notesOnly ? item.measure : "", noteText(note), cohortDay: cohortDay), 0))
        }
        return keys
    }

    /// A measure kept per window of first-seen cohort (`revenue/30d`, or `/30d` for its notes):
    /// the measure and its window; nil for every other measure.
    static func windowed(_ measure: String) -> (String, ChartWindow)? {
        guard let slash = measure.firstIndex(of: "/"),
            let window = ChartWindow(rawValue: String(measure[measure.index(after: slash)...]))
        else { return nil }
        return (String(measure[..<slash]), window)
    }

    /// A measure kept per grain of cohort (`paying/month`): the measure and its grain; nil for
    /// the day's own (`paying`) and every other measure.
    static func grained(_ measure: String) -> (String, Resolution)? {
        guard let slash = measure.firstIndex(of: "/"),
            let grain = Resolution(rawValue: String(measure[measure.index(after: slash)...]))
        else { return measure == "paying" ? ("paying", .day) : nil }
        return (String(measure[..<slash]), grain)
    }

    /// The row as an item whose instants are its days' starts: counted exactly as its items are
    /// on any day but those it touches.
    var item: ChartItem {
        ChartItem(
            measure: key.measure, kind: key.kind, at: Rollup.start(key.atDay), until: Rollup.start(key.untilDay),
            validFrom: Rollup.start(key.validFromDay), validUntil: Rollup.start(key.validUntilDay),
            cohort: key.cohortDay == Self.noCohort ? nil : Rollup.start(key.cohortDay), value: value,
            isMoney: Book.moneyMeasures.contains(key.measure), appUserID: "", originalTransactionID: "", transactionID: "",
            notes: key.note.isEmpty ? [] : Self.note(key.note).map { [$0] } ?? [], bundleID: key.bundleID,
            store: Store.named(key.store) ?? .appStore, count: items)
    }

    /// A note as stable text: `rate␟USD␟20454`, `price␟monthly␟USA` (`price␟monthly` without a
    /// storefront), `untaxed␟FRA`.
    package static func noteText(_ note: ItemNote) -> String {
        switch note {
        case .missingRate(let currency, let day): "rate\u{1F}\(currency)\u{1F}\(day)"
        case .missingPrice(let product, let storefront): "price\u{1F}\(product)" + (storefront.map { "\u{1F}" + $0 } ?? "")
        case .untaxed(let storefront): "untaxed\u{1F}\(storefront)"
        }
    }

    package static func note(_ text: String) -> ItemNote? {
        let parts = text.split(separator: "\u{1F}", omittingEmptySubsequences: false).map(String.init)
        switch (parts.first, parts.count) {
        case ("rate", 3): return Int64(parts[2]).map { .missingRate(currency: parts[1], day: $0) }
        case ("price", 2): return .missingPrice(productID: parts[1], storefront: nil)
        case ("price", 3): return .missingPrice(productID: parts[1], storefront: parts[2])
        case ("untaxed", 2): return .untaxed(storefront: parts[1])
        default: return nil
        }
    }
}

/// An item kept exactly, for the days it has an instant on: what today's figures are summed from.
package struct RollupMoment: Sendable, Equatable {
    package var environment: String
    package var chart: Chart
    package var item: ChartItem
    /// The days (since 1970-01-01) of its instants, from the day it was written on.
    package var days: [Int64]

    package init(environment: String, chart: Chart, item: ChartItem, days: [Int64]) {
        self.environment = environment
        self.chart = chart
        self.item = item
        self.days = days
    }

    /// The days of an item's instants that are `today` or later, ascending, each once, but its
    /// start's when it had begun at `writtenAt` (its rows are settled). A start-of-period stock
    /// has none that matter (``RollupRow/Key/touches(_:)``).
    static func days(of item: ChartItem, onOrAfter today: Int64, writtenAt: Int64) -> [Int64] {
        guard item.kind != .stockAtStart else { return [] }
        var instants = [item.validFrom, item.validUntil]
        if item.at > writtenAt { instants.append(item.at) }
        if item.kind == .stock { instants.append(item.until) }
        if let cohort = item.cohort { instants.append(cohort) }
        return Set(instants.map(Rollup.floorDay).filter { $0 >= today && $0 != .max }).sorted()
    }
}

extension ChartItem {
    func admitted(by filters: ChartFilters) -> Bool {
        (filters.app.map { $0 == bundleID } ?? true) && (filters.store.map { $0 == store } ?? true)
    }
}

extension ItemNote {
    var isUntaxed: Bool { if case .untaxed = self { true } else { false } }
}
