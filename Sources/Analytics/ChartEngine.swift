import Entitlements
import Identifiers

/// Computes a chart from a ledger: pure, the clock passed in. The ledger's items
/// (``ChartItem``) are summed into the query's periods, so every figure is a sum of
/// contributions (or a ratio of two such sums) and a drill-down lists exactly what makes it.
package struct ChartEngine: Sendable {
    package var ledger: Ledger
    package var rates: ExchangeRates
    package var settings: AnalyticsSettings

    package init(ledger: Ledger, rates: ExchangeRates, settings: AnalyticsSettings) {
        self.ledger = ledger
        self.rates = rates
        self.settings = settings
    }

    package func answer(_ q: ChartQuery) throws(ChartError) -> ChartAnswer {
        try ChartSum(q, currency: q.currency ?? settings.reportingCurrency).answer(items(q))
    }

    /// The contributions to one figure: a measure of the period whose label is `period`.
    package func drill(_ q: ChartQuery, period: String, measure: String) throws(ChartError) -> Drill {
        try ChartSum(q, currency: q.currency ?? settings.reportingCurrency).drill(items(q), period: period, measure: measure)
    }

    /// What the ledger adds to the query's chart, before periods and the clock.
    package func items(_ q: ChartQuery) -> [ChartItem] {
        ItemRecorder.record(
            ledger, chart: q.chart, filters: q.filters, currency: q.currency ?? settings.reportingCurrency, rates: rates,
            settings: settings, window: q.cohortWindow, groupBy: q.groupBy)
    }
}

/// Sums items into a query's periods, at the query's now: a flow in the period of its instant
/// once it has happened, a stock at each period's last instant that has happened (or first,
/// for churn's actives at the start), a cohort's items in the period of its first paid instant.
package struct ChartSum {
    let q: ChartQuery
    let grid: PeriodGrid
    let currency: String

    package init(_ q: ChartQuery, currency: String) throws(ChartError) {
        self.q = q
        self.currency = currency
        grid = try PeriodGrid(q)
    }

    package func answer(_ items: [ChartItem]) -> ChartAnswer {
        var running = Running(Book(q: q, grid: grid, currency: currency, focus: nil))
        running.add(items)
        return running.answer()
    }

    package func drill(_ items: [ChartItem], period: String, measure: String) throws(ChartError) -> Drill {
        var running = try drilling(period: period, measure: measure)
        running.add(items)
        return try running.drill()
    }

    /// A sum taking its items a batch at a time (a subscriber's, say), so no more than a batch
    /// is ever held: every item adds to the figures independently of the others.
    package struct Running: Sendable {
        var book: Book
        /// Per group, when the query splits its figures (and is not a drill-down's): by the
        /// value's bytes, so that two spellings of a product or an app are two groups.
        var groups: [Identifier: Book] = [:]

        init(_ book: Book) { self.book = book }

        package mutating func add(_ items: [ChartItem]) {
            book.count(items)
            guard book.q.groupBy != nil, book.focus == nil else { return }
            var byGroup: [Identifier: [ChartItem]] = [:]
            for item in items { byGroup[Identifier(item.group), default: []].append(item) }
            for (group, items) in byGroup {
                groups[group, default: Book(q: book.q, grid: book.grid, currency: book.currency, focus: nil)].count(items)
            }
        }

        /// The contributions kept so far (a drill-down's).
        package var contributionCount: Int { book.contributions.count }

        package func answer() -> ChartAnswer {
            var book = book
            book.close()
            var answer = book.finish()
            answer.groupBy = book.q.groupBy
            // A group is listed when something of it shows in the range: a figure other than
            // zero, or something left out. A country whose sales all came before the range is
            // not one of its groups (nor one whose subscriptions ended before it, though the
            // rollups keep their two changes, +value and −value, on days within it).
            answer.groups = groups.keys.sorted().compactMap { value in
                var group = groups[value]!
                group.close()
                let figures = group.finish()
                guard !figures.figures.isZero || figures.leftOut.contains(where: { $0 != 0 }) else { return nil }
                return ChartGroup(
                    value: value.string, measures: figures.measures, figures: figures.figures, leftOut: figures.leftOut)
            }
            return answer
        }

        /// The drill-down this sum was started for (``ChartSum/drilling(period:measure:)``).
        package func drill() throws(ChartError) -> Drill {
            guard let (index, measure) = book.focus else { throw .unknownMeasure("") }
            let answer = answer()
            guard answer.measures.contains(measure) || book.q.chart.definition.cohortBase != nil && measure.hasPrefix("paying_")
            else {
                throw .unknownMeasure(measure)
            }
            return Drill(
                period: book.grid.periods[index], measure: measure, value: answer.figures[index, measure],
                contributions: answer.contributions)
        }
    }

    package func running() -> Running { Running(Book(q: q, grid: grid, currency: currency, focus: nil)) }

    /// The query of the period labelled `period` alone, which has the same figures for it: a
    /// period's figures are the items counting at its own instants. Not a cohort chart's, whose
    /// `paying_N` reach N periods on: nil for those, and for a label not of this chart.
    package func query(ofPeriod period: String) -> ChartQuery? {
        guard q.chart.definition.cohortBase == nil, let p = grid.periods.first(where: { $0.label == period }) else { return nil }
        var one = q
        (one.from, one.to) = (p.start, p.end)
        return one
    }

    /// Whether `measure` is a cohort's `paying_N` as the chart writes it: N in decimal without a
    /// leading zero, no more than the grid's periods. Exactly those, so what a drill echoes (a
    /// CSV's file name among it) is always one of the chart's own names.
    static func isPaying(_ measure: String, within periods: Int) -> Bool {
        let digits = measure.utf8.dropFirst(7)
        guard measure.utf8.starts(with: "paying_".utf8), (1...6).contains(digits.count),
            digits.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), digits.count == 1 || digits.first != 0x30,
            let n = Int(Substring(digits))
        else { return false }
        return n <= periods
    }

    /// A sum that also keeps the contributions to one figure.
    package func drilling(period: String, measure: String) throws(ChartError) -> Running {
        if let parts = q.chart.parts(of: measure) { throw .derivedMeasure(measure, parts: parts) }
        guard let index = grid.periods.firstIndex(where: { $0.label == period }) else { throw .unknownPeriod(period) }
        guard
            q.chart.measures.contains(measure)
                || q.chart.definition.cohortBase != nil && Self.isPaying(measure, within: grid.periods.count)
        else { throw .unknownMeasure(measure) }
        return Running(Book(q: q, grid: grid, currency: currency, focus: (index, measure)))
    }
}

/// The figures of one chart being summed.
struct Book: Sendable {
    let q: ChartQuery
    let grid: PeriodGrid
    let currency: String
    let focus: (Int, String)?
    /// Each begun period's last instant that has happened (its end, or now), ascending.
    let instants: [Int64]
    /// Each begun period's first instant, ascending.
    let starts: [Int64]
    var measures: [String]
    var values: Figures
    var contributions: [Contribution] = []
    /// Per missing rate (its currency, day and conversion), how many sales lacked it.
    var missingRateCounts: [MissingRate.Gap: Int] = [:]
    var missingPrices: [Identifier: (String, String?, Int)] = [:]
    var untaxed: Set<String> = []
    /// Stocks: per measure, the differences at each instant (settled into values at the end).
    var held: [String: [Int64]] = [:]
    /// Cohorts in the grid: the periods they span.
    var longest = 0
    /// Cohorts: per cohort's period, the differences of `paying_N` at each N (settled at the end).
    var paying: [Int: [Int64]] = [:]
    /// Per period, the difference of how many items its amounts left out (settled at the end).
    var leftOut: [Int64]

    init(q: ChartQuery, grid: PeriodGrid, currency: String, focus: (Int, String)?) {
        self.q = q
        self.grid = grid
        self.currency = currency
        self.focus = focus
        instants = grid.periods.compactMap { $0.start > q.now ? nil : min($0.end, q.now + 1) - 1 }
        starts = grid.periods.map(\.start).filter { $0 <= q.now }
        measures = q.chart.measures
        values = Figures(periods: grid.periods.count)
        leftOut = Array(repeating: 0, count: grid.periods.count + 1)
    }

    /// Every chart's measures that are amounts of money.
    static let moneyMeasures = Set(Chart.allCases.flatMap(\.definition.money))

    // MARK: Summing

    mutating func count(_ items: [ChartItem]) {
        for item in items where item.isValid(at: q.now) && (q.group.map({ item.group.isExactly($0) }) ?? true) {
            guard let periods = count(item) else { continue }
            note(item.notes, times: item.count)
            // What the amounts of those periods left out (no rate, no price), marked on each.
            if item.notes.contains(where: \.leavesOut) {
                leftOut[periods.lowerBound] += item.count
                leftOut[periods.upperBound] -= item.count
            }
        }
    }

    /// Once every item is in: stocks settled, zeros where nothing came, ratios (the chart's
    /// definition says which).
    mutating func close() { q.chart.definition.close(&self) }

    /// Adds an item where it belongs; the periods it counted in (a cohort's item: its cohort's).
    mutating func count(_ item: ChartItem) -> Range<Int>? {
        if let cohort = item.cohort {
            guard cohort <= q.now, item.at <= q.now, let i = grid.index(of: cohort) else { return nil }
            if item.kind == .flow {
                if item.measure == q.chart.definition.cohortBase { longest = max(longest, instants.count - i) }
                add(i, item.measure, item)
                return i..<(i + 1)
            }
            // The cohort's instants within [at, until), found by search.
            let low = max(i, Self.firstIndex(in: instants, atLeast: item.at))
            let high = max(low, Self.firstIndex(in: instants, atLeast: item.until))
            if let focus, focus.0 == i, focus.1.hasPrefix("paying_") {
                for j in low..<high { add(i, "paying_\(j - i)", item) }
            } else if low < high {
                // Summed as differences, settled once at the end: a span costs the same however long.
                paying[i, default: Array(repeating: 0, count: instants.count - i + 1)][low - i] += item.value
                paying[i]![high - i] -= item.value
            }
            return low < high ? i..<(i + 1) : nil
        }
        switch item.kind {
        case .flow:
            guard item.at <= q.now, let i = grid.index(of: item.at) else { return nil }
            add(i, item.measure, item)
            return i..<(i + 1)
        case .stock, .stockAtStart:
            let list = item.kind == .stock ? instants : starts
            let low = Self.firstIndex(in: list, atLeast: item.at)
            let high = Self.firstIndex(in: list, atLeast: item.until)
            guard low < high else { return nil }
            guard !item.measure.isEmpty else { return low..<high }
            held[item.measure, default: Array(repeating: 0, count: list.count + 1)][low] += item.value
            held[item.measure]![high] -= item.value
            if let focus, focus.1 == item.measure, (low..<high).contains(focus.0) { contribute(focus.0, item.measure, item) }
            return low..<high
        }
    }

    mutating func add(_ period: Int, _ measure: String, _ item: ChartItem) {
        guard !measure.isEmpty else { return }
        let value: Measure = item.isMoney ? .money(item.value) : .count(item.value)
        let c = values.ensureColumn(measure)
        values[period, c] = values[period, c].map { $0 + value } ?? value
        if let focus, focus.0 == period, focus.1 == measure { contribute(period, measure, item) }
    }

    /// A drill lists what makes its figure: an item that adds nothing to it (a sale's refunds when
    /// nothing was refunded) is not one of its contributions. (Untaxed sales are the figure's own
    /// note, `untaxed`, not zeros in the tax drill.)
    mutating func contribute(_ period: Int, _ measure: String, _ item: ChartItem) {
        guard item.value != 0 else { return }
        contributions.append(
            Contribution(
                period: grid.periods[period].label, measure: measure, appUserID: item.appUserID,
                originalTransactionID: item.originalTransactionID, transactionID: item.transactionID,
                value: item.isMoney ? .money(item.value) : .count(item.value), detail: item.detail))
    }

    mutating func note(_ notes: [ItemNote], times: Int64) {
        for note in notes {
            switch note {
            case .missingRate(let code, let day, let from, let to):
                let (y, m, d) = CivilTime.date(fromDays: day)
                missingRateCounts[.init(currency: code, day: PeriodGrid.label(y, m, d), from: from, to: to), default: 0] += Int(
                    times)
            case .missingPrice(let product, let storefront):
                missingPrices[Identifier(product + "\u{0}" + (storefront ?? "")), default: (product, storefront, 0)].2 += Int(
                    times)
            case .untaxed(let storefront): untaxed.insert(storefront)
            }
        }
    }

    /// Differences summed into their running values, one per period.
    static func settled(_ differences: [Int64]) -> [Int64] {
        var running: Int64 = 0
        return differences.dropLast().map { d in
            running += d
            return running
        }
    }

    /// The first index of `sorted` whose value is at least `t` (`sorted.count` when none).
    static func firstIndex(in sorted: [Int64], atLeast t: Int64) -> Int {
        var (low, high) = (0, sorted.count)
        while low < high {
            let mid = (low + high) / 2
            if sorted[mid] < t { low = mid + 1 } else { high = mid }
        }
        return low
    }

    /// Stocks' values at each period with an instant in `list`.
    mutating func settle(_ names: [String], at list: [Int64]) {
        for name in names {
            var running: Int64 = 0
            let differences = held[name] ?? Array(repeating: 0, count: list.count + 1)
            let (c, money) = (values.ensureColumn(name), Self.moneyMeasures.contains(name))
            for i in list.indices {
                running += differences[i]
                values[i, c] = money ? .money(running) : .count(running)
            }
        }
    }

    /// Sets a measure to zero where nothing contributed, for the periods that have begun.
    mutating func zero(_ names: [String]) {
        for name in names {
            let (c, zero): (Int, Measure) = (values.ensureColumn(name), Self.moneyMeasures.contains(name) ? .money(0) : .count(0))
            for i in grid.periods.indices where grid.periods[i].start <= q.now && values[i, c] == nil { values[i, c] = zero }
        }
    }

    /// An amount per head: `money` ÷ `count`, rounded half to even, where both have a figure and
    /// the count is not zero.
    mutating func quotient(_ name: String, _ money: String, _ count: String) {
        let (c, mc, nc) = (values.ensureColumn(name), values.ensureColumn(money), values.ensureColumn(count))
        for i in 0..<values.periods {
            guard case .money(let amount)? = values[i, mc], case .count(let n)? = values[i, nc] else { continue }
            values[i, c] = n == 0 ? nil : .money(Money.scale(amount, by: 1, over: Int128(n)))
        }
    }

    mutating func ratio(_ name: String, _ numerator: String, _ denominator: String, minus: String? = nil) {
        let (c, nc, dc) = (values.ensureColumn(name), values.ensureColumn(numerator), values.ensureColumn(denominator))
        let mc = minus.map { values.ensureColumn($0) }
        for i in 0..<values.periods {
            guard case .count(let d)? = values[i, dc], case .count(var n)? = values[i, nc] else { continue }
            if let mc, case .count(let m)? = values[i, mc] { n -= m }
            values[i, c] = .ratio(n, d)
        }
    }

    /// Each cohort's share still paying N periods on, and its realised LTV (revenue ÷ customers).
    /// A cohort chart by day has 730 cohorts of up to 730 periods: each name is made and found
    /// once, its column written by index, with cells only for the cohorts that reached its age
    /// (the `instants.count - N` first).
    mutating func settleCohorts() {
        measures += (0..<longest).flatMap { ["paying_\($0)", "retention_\($0)"] }
        let count = max(longest, instants.count) + 1
        values.reserve(columns: 2 * count, cells: instants.count * (instants.count + 1))
        let columns = (0..<count).map {
            (
                paying: values.ensureColumn("paying_\($0)", length: instants.count - $0),
                retention: values.ensureColumn("retention_\($0)", length: instants.count - $0)
            )
        }
        for (i, differences) in paying {
            // A drill-down into this cohort has added its own figures already.
            let drilled = focus?.0 == i
            var running: Int64 = 0
            for k in 0..<(differences.count - 1) {
                running += differences[k]
                guard running != 0 else { continue }
                let before: Int64 = if drilled, case .count(let n)? = values[i, columns[k].paying] { n } else { 0 }
                values[i, columns[k].paying] = .count(before + running)
            }
        }
        let customersColumn = values.ensureColumn(q.chart.definition.cohortBase ?? "customers")
        // The customers' cohorts have their revenue and realised LTV; a subscription's have not.
        let withRevenue = q.chart.measures.contains("ltv")
        let (revenueColumn, ltvColumn) = withRevenue ? (values.ensureColumn("revenue"), values.ensureColumn("ltv")) : (0, 0)
        for i in 0..<values.periods {
            guard let customers = values[i, customersColumn] else { continue }
            for k in 0..<max(0, instants.count - i) {
                // Counts only: a cohort nobody of which pays any more has a 0.
                let paying: Int64
                if case .count(let n)? = values[i, columns[k].paying] {
                    paying = n
                } else {
                    paying = 0
                    values[i, columns[k].paying] = .count(0)
                }
                if case .count(let n) = customers { values[i, columns[k].retention] = .ratio(paying, n) }
            }
            guard withRevenue else { continue }
            if values[i, revenueColumn] == nil { values[i, revenueColumn] = .money(0) }
            if case .money(let revenue)? = values[i, revenueColumn], case .count(let n) = customers {
                values[i, ltvColumn] = .money(Money.scale(revenue, by: 1, over: Int128(n)))
            }
        }
    }

    // MARK: The answer

    func finish() -> ChartAnswer {
        let rates = missingRateCounts.sorted { $0.key < $1.key }.map { gap, n in
            MissingRate(currency: gap.currency, day: gap.day, from: gap.from, to: gap.to, transactions: n)
        }
        let prices = missingPrices.keys.sorted().map { key in
            let (product, storefront, n) = missingPrices[key]!
            return MissingPrice(productID: product, storefront: storefront, transactions: n)
        }
        return ChartAnswer(
            chart: q.chart, currency: currency, resolution: grid.resolution, zone: q.zone.name, periods: grid.periods,
            measures: measures, figures: values, contributions: contributions, missingRates: rates, missingPrices: prices,
            untaxedStorefronts: q.chart == .revenue ? untaxed.sorted() : [], window: q.cohortWindow,
            leftOut: Self.settled(leftOut), begun: instants.count)
    }
}

extension PeriodGrid {
    /// The periods a query asks about: from `from` to `to` (at least one), by its resolution in
    /// its zone.
    init(_ q: ChartQuery) throws(ChartError) {
        do throws(PeriodGrid.TooMany) {
            try self.init(from: q.from, to: max(q.to, q.from + 1), resolution: q.resolution, zone: q.zone)
        } catch {
            throw .tooManyPeriods
        }
    }
}
