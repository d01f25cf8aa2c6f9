import Entitlements

/// Computes a chart from a ledger: pure, the clock passed in. Every figure is a sum of
/// contributions (or a ratio of two such sums), so a drill-down lists exactly what makes it.
public struct ChartEngine: Sendable {
    public var ledger: Ledger
    public var rates: ExchangeRates
    public var settings: AnalyticsSettings

    public init(ledger: Ledger, rates: ExchangeRates, settings: AnalyticsSettings) {
        self.ledger = ledger
        self.rates = rates
        self.settings = settings
    }

    public func answer(_ q: ChartQuery) throws(ChartError) -> ChartAnswer {
        try run(q, focus: nil)
    }

    /// The contributions to one figure: a measure of the period whose label is `period`.
    public func drill(_ q: ChartQuery, period: String, measure: String) throws(ChartError) -> Drill {
        if let parts = Chart.parts(of: measure) { throw .derivedMeasure(measure, parts: parts) }
        let grid = try Self.grid(q)
        guard let index = grid.periods.firstIndex(where: { $0.label == period }) else { throw .unknownPeriod(period) }
        let answer = try run(q, focus: (index, measure))
        guard answer.measures.contains(measure) || q.chart == .cohorts && measure.hasPrefix("paying_") else {
            throw .unknownMeasure(measure)
        }
        return Drill(
            period: grid.periods[index], measure: measure, value: answer.values[index][measure],
            contributions: answer.contributions)
    }

    static func grid(_ q: ChartQuery) throws(ChartError) -> PeriodGrid {
        do throws(PeriodGrid.TooMany) {
            return try PeriodGrid(from: q.from, to: max(q.to, q.from + 1), resolution: q.resolution, zone: q.zone)
        } catch {
            throw .tooManyPeriods
        }
    }

    private func run(_ q: ChartQuery, focus: (Int, String)?) throws(ChartError) -> ChartAnswer {
        let grid = try Self.grid(q)
        var book = Book(
            q: q, grid: grid, currency: q.currency ?? settings.reportingCurrency, rates: rates, settings: settings,
            focus: focus, entries: ledger.entries)
        let lines = SubscriptionLine.lines(ledger, filters: q.filters)
        switch q.chart {
        case .revenue: book.revenue()
        case .mrr: book.mrr(lines)
        case .actives: book.actives(lines)
        case .trials: book.newTrials()
        case .trialConversion: book.trialConversion(lines)
        case .churn: book.churn(lines)
        case .refundRate: book.refundRate()
        case .cohorts: book.cohorts(lines)
        }
        return book.finish()
    }
}

/// The figures of one chart being summed.
struct Book {
    let q: ChartQuery
    let grid: PeriodGrid
    let currency: String
    let rates: ExchangeRates
    let settings: AnalyticsSettings
    let focus: (Int, String)?
    /// The entries the filters admit, oldest first.
    let admitted: [Ledger.Entry]
    let commission: Commission
    var measures: [String]
    var values: [[String: Measure]]
    var contributions: [Contribution] = []
    var missingRateCounts: [String: Int] = [:]
    var missingPrices: [String: (String, String?, Int)] = [:]
    var untaxed: Set<String> = []
    /// Stocks held over spans: per measure, the differences at each period (``hold``).
    var held: [String: [Int64]] = [:]

    init(
        q: ChartQuery, grid: PeriodGrid, currency: String, rates: ExchangeRates, settings: AnalyticsSettings,
        focus: (Int, String)?, entries: [Ledger.Entry]
    ) {
        self.q = q
        self.grid = grid
        self.currency = currency
        self.rates = rates
        self.settings = settings
        self.focus = focus
        admitted = entries.filter { q.filters.admits($0) }.sorted {
            Purchase.chronological($0.purchase, $1.purchase)
        }
        // Years of service count every purchase of the environment, whatever the other filters.
        commission = Commission(
            entries.filter { $0.purchase.environment == q.filters.environment }, smallBusinessApps: settings.smallBusinessApps)
        measures = q.chart.measures
        values = Array(repeating: [:], count: grid.periods.count)
    }

    // MARK: Summing

    mutating func add(_ period: Int, _ measure: String, _ value: Measure, _ e: Ledger.Entry, detail: String? = nil) {
        values[period][measure] = values[period][measure].map { $0 + value } ?? value
        guard let focus, focus.0 == period, focus.1 == measure else { return }
        contributions.append(
            Contribution(
                period: grid.periods[period].label, measure: measure, appUserID: e.appUserID,
                originalTransactionID: e.purchase.originalTransactionID, transactionID: e.purchase.transactionID, value: value,
                detail: detail))
    }

    /// Adds `value` to `measure` at each period whose instant (`instants`, ascending; nil from
    /// the first period not begun) falls in [`start`, `end`): a stock held over a span, summed
    /// as a difference at both ends and settled by ``settle(_:instants:money:)``, so a line
    /// costs its pieces, not the periods it spans.
    mutating func hold(
        _ measure: String, _ value: Int64, from start: Int64, to end: Int64, instants: [Int64], _ e: Ledger.Entry,
        money: Bool = false, detail: String? = nil
    ) {
        let low = Self.firstIndex(in: instants, atLeast: start)
        let high = Self.firstIndex(in: instants, atLeast: end)
        guard low < high else { return }
        held[measure, default: Array(repeating: 0, count: instants.count + 1)][low] += value
        held[measure]![high] -= value
        guard let focus, focus.1 == measure, (low..<high).contains(focus.0) else { return }
        contributions.append(
            Contribution(
                period: grid.periods[focus.0].label, measure: measure, appUserID: e.appUserID,
                originalTransactionID: e.purchase.originalTransactionID, transactionID: e.purchase.transactionID,
                value: money ? .money(value) : .count(value), detail: detail))
    }

    /// The held measures' values at each period with an instant.
    mutating func settle(_ names: [String], instants: [Int64], money: Set<String> = []) {
        for name in names {
            var running: Int64 = 0
            let differences = held[name] ?? Array(repeating: 0, count: instants.count + 1)
            for i in instants.indices {
                running += differences[i]
                values[i][name] = money.contains(name) ? .money(running) : .count(running)
            }
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

    /// Each begun period's last instant that has happened (its end, or now), ascending.
    var observedInstants: [Int64] { grid.periods.compactMap(observed) }

    /// Sets a measure to zero where nothing contributed, for the periods that have begun.
    mutating func zero(_ names: [String], money: Set<String> = []) {
        for i in grid.periods.indices where grid.periods[i].start <= q.now {
            for name in names where values[i][name] == nil { values[i][name] = money.contains(name) ? .money(0) : .count(0) }
        }
    }

    mutating func ratio(_ name: String, _ numerator: String, _ denominator: String, minus: String? = nil) {
        for i in values.indices {
            guard case .count(let d)? = values[i][denominator], case .count(var n)? = values[i][numerator] else { continue }
            if let minus, case .count(let m)? = values[i][minus] { n -= m }
            values[i][name] = .ratio(n, d)
        }
    }

    /// The priced sale of an entry, or nil (recorded as missing) when nothing priced it.
    mutating func charge(_ e: Ledger.Entry) -> Charge? {
        let p = e.purchase
        guard !p.isFamilyShared, !p.isFreeTrial else { return nil }
        guard let price = settings.price(of: p) else {
            let key = p.productID + "\u{0}" + (p.commerce.storefront ?? "")
            missingPrices[key, default: (p.productID, p.commerce.storefront, 0)].2 += 1
            return nil
        }
        guard price.milliunits > 0 else { return nil }
        let tax = p.commerce.storefront.flatMap { settings.taxRates[$0] }
        if tax == nil { untaxed.insert(p.commerce.storefront ?? "unknown") }
        return Charge(entry: e, price: price, commissionPercent: commission.percent(e), taxPPM: tax)
    }

    /// An amount of a charge's currency in the answer's, at the charge's day; nil (recorded)
    /// when a rate is missing.
    mutating func convert(_ amount: Int64, _ c: Charge, times numerator: Int64 = 1, over denominator: Int64 = 1) -> Int64? {
        if let converted = rates.convert(
            amount, times: numerator, over: denominator, from: c.price.currency, to: currency, day: c.day)
        {
            return converted
        }
        for code in [c.price.currency, currency] where code != "EUR" && rates.perEuro(code, day: c.day) == nil {
            let (y, m, d) = CivilTime.date(fromDays: c.day)
            let day = PeriodGrid.label(y, m, d)
            missingRateCounts[code + " " + day, default: 0] += 1
        }
        return nil
    }

    /// The last instant of a period that has happened: its end, or now.
    func observed(_ period: Period) -> Int64? {
        period.start > q.now ? nil : min(period.end, q.now + 1) - 1
    }

    // MARK: The charts

    /// Revenue in the period of the sale; a refund, whenever it came, is booked back to it.
    mutating func revenue() {
        for e in admitted {
            guard let at = e.purchase.purchaseDate, at <= q.now, let i = grid.index(of: at), let c = charge(e) else { continue }
            guard let gross = convert(c.gross, c), let refunds = convert(c.refunds, c), let proceeds = convert(c.proceeds, c)
            else { continue }
            let tax = c.tax.flatMap { convert($0, c) } ?? 0
            let net = gross - refunds
            let source = "price from \(c.price.source.rawValue), \(Money.text(c.price.milliunits)) \(c.price.currency)"
            add(i, "transactions", .count(1), e, detail: source)
            add(i, "gross", .money(gross), e, detail: source)
            add(i, "refunds", .money(refunds), e, detail: c.refundKind)
            add(i, "net", .money(net), e)
            add(i, "tax", .money(tax), e, detail: c.tax == nil ? "no tax rate for the storefront" : nil)
            add(i, "commission", .money(net - tax - proceeds), e, detail: "\(c.commissionPercent) %")
            add(i, "proceeds", .money(proceeds), e, detail: "estimated")
        }
        zero(["transactions", "gross", "refunds", "net", "tax", "commission", "proceeds"], money: moneyMeasures)
    }

    let moneyMeasures: Set<String> = ["gross", "refunds", "net", "tax", "commission", "proceeds", "mrr", "arr", "revenue", "ltv"]

    /// Each active paid subscription's price normalised to a month, at the end of each period.
    mutating func mrr(_ lines: [SubscriptionLine]) {
        let instants = observedInstants
        for line in lines {
            for piece in line.payingPieces {
                let e = piece.entry
                hold("subscriptions", 1, from: piece.start, to: piece.end, instants: instants, e)
                guard Self.firstIndex(in: instants, atLeast: piece.start) < Self.firstIndex(in: instants, atLeast: piece.end),
                    let c = charge(e), let (n, d, name) = Self.monthly(e.purchase),
                    let monthly = convert(c.price.milliunits, c, times: n, over: d)
                else { continue }
                let detail = "\(Money.text(c.price.milliunits)) \(c.price.currency) per \(name)"
                hold("mrr", monthly, from: piece.start, to: piece.end, instants: instants, e, money: true, detail: detail)
                hold("arr", monthly * 12, from: piece.start, to: piece.end, instants: instants, e, money: true, detail: detail)
            }
        }
        settle(["subscriptions", "mrr", "arr"], instants: instants, money: moneyMeasures)
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

    /// Paid subscriptions (grace period included, family sharing not) and free trials active
    /// at the end of each period.
    mutating func actives(_ lines: [SubscriptionLine]) {
        let instants = observedInstants
        for line in lines {
            for piece in line.payingPieces {
                hold("subscriptions", 1, from: piece.start, to: piece.end, instants: instants, piece.entry)
            }
            for piece in line.trialPieces { hold("trials", 1, from: piece.start, to: piece.end, instants: instants, piece.entry) }
        }
        settle(["subscriptions", "trials"], instants: instants)
    }

    static func isTrial(_ p: Purchase, at t: Int64) -> Bool {
        guard p.isFreeTrial, !p.isFamilyShared, let start = p.purchaseDate, let end = p.accessEnd else { return false }
        return start <= t && t < end
    }

    mutating func newTrials() {
        for e in admitted where e.purchase.isFreeTrial && !e.purchase.isFamilyShared {
            guard let at = e.purchase.purchaseDate, at <= q.now, let i = grid.index(of: at) else { continue }
            add(i, "new_trials", .count(1), e)
        }
        zero(["new_trials"])
    }

    /// Each subscription's first free trial, by the period it started: converted (a paid period
    /// followed and was not refunded), pending (still running, set to renew) or abandoned.
    mutating func trialConversion(_ lines: [SubscriptionLine]) {
        for line in lines {
            guard let trial = line.entries.first(where: { $0.purchase.isFreeTrial && !$0.purchase.isFamilyShared }),
                let start = trial.purchase.purchaseDate, start <= q.now, let i = grid.index(of: start)
            else { continue }
            add(i, "trials", .count(1), trial)
            let paid = line.entries.first {
                $0.purchase.isPaidPeriod && ($0.purchase.purchaseDate ?? .min) >= start
                    && ($0.purchase.purchaseDate ?? .max) <= q.now
            }
            if let paid {
                if paid.purchase.isRefunded {
                    add(i, "abandoned", .count(1), paid, detail: "the first paid period was refunded")
                } else {
                    add(i, "converted", .count(1), paid, detail: "first paid period")
                }
            } else if (trial.purchase.accessEnd ?? .min) > q.now && line.renewal?.autoRenewStatus != false {
                add(i, "pending", .count(1), trial, detail: "trial running, set to renew")
            } else {
                add(i, "abandoned", .count(1), trial, detail: trial.purchase.isRefunded ? "trial revoked" : "trial ended unpaid")
            }
        }
        zero(["trials", "converted", "pending", "abandoned"])
        ratio("conversion_rate", "converted", "trials")
    }

    /// Churned: paid access that ended in the period (after any grace period) and had not
    /// resumed; resubscribed: paid access resumed after a gap. Rate: (churned − resubscribed) ÷
    /// paid actives at the period's start.
    mutating func churn(_ lines: [SubscriptionLine]) {
        let starts = grid.periods.map(\.start).filter { $0 <= q.now }
        for line in lines {
            for piece in line.payingPieces {
                hold("actives_at_start", 1, from: piece.start, to: piece.end, instants: starts, piece.entry)
            }
            for (n, interval) in line.paid.enumerated() {
                if interval.end <= q.now, let i = grid.index(of: interval.end), let e = line.payingEntry(at: interval.end - 1) {
                    add(i, "churned", .count(1), e, detail: "paid access ended")
                }
                if n > 0, interval.start <= q.now, let i = grid.index(of: interval.start),
                    let e = line.payingEntry(at: interval.start)
                {
                    add(i, "resubscribed", .count(1), e, detail: "paid access resumed after a gap")
                }
            }
        }
        settle(["actives_at_start"], instants: starts)
        zero(["churned", "resubscribed"])
        ratio("churn_rate", "churned", "actives_at_start", minus: "resubscribed")
    }

    /// Paid sales of the period (free trials and family sharing aside) and those refunded since.
    mutating func refundRate() {
        for e in admitted where !e.purchase.isFreeTrial && !e.purchase.isFamilyShared {
            guard let at = e.purchase.purchaseDate, at <= q.now, let i = grid.index(of: at) else { continue }
            add(i, "paid_transactions", .count(1), e)
            if e.purchase.isRefunded, (e.purchase.cancellationDate ?? .max) <= q.now {
                add(i, "refunded_transactions", .count(1), e, detail: e.purchase.commerce.revocationType ?? "refund")
            }
        }
        zero(["paid_transactions", "refunded_transactions"])
        ratio("refund_rate", "refunded_transactions", "paid_transactions")
    }

    /// Customers by the period of their first paid subscription period: how many still pay
    /// (have paid access) at the end of each period on, and their net revenue so far (realised
    /// LTV: revenue ÷ customers).
    mutating func cohorts(_ lines: [SubscriptionLine]) {
        var linesByUser: [String: [SubscriptionLine]] = [:]
        for line in lines { linesByUser[line.appUserID, default: []].append(line) }
        var firstPaid: [String: Ledger.Entry] = [:]
        for e in admitted where e.purchase.isPaidPeriod && (e.purchase.purchaseDate ?? .max) <= q.now {
            if firstPaid[e.appUserID] == nil { firstPaid[e.appUserID] = e }
        }
        var cohortOf: [String: Int] = [:]
        var longest = 0
        for (user, e) in firstPaid.sorted(by: { $0.key < $1.key }) {
            guard let i = grid.index(of: e.purchase.purchaseDate!) else { continue }
            cohortOf[user] = i
            add(i, "customers", .count(1), e, detail: "first paid period")
            for k in 0..<(grid.periods.count - i) {
                guard let t = observed(grid.periods[i + k]) else { break }
                longest = max(longest, k + 1)
                for line in linesByUser[user] ?? [] {
                    if let paying = line.payingEntry(at: t) {
                        add(i, "paying_\(k)", .count(1), paying)
                        break
                    }
                }
            }
        }
        for e in admitted where (e.purchase.purchaseDate ?? .max) <= q.now {
            guard let i = cohortOf[e.appUserID], let c = charge(e), let gross = convert(c.gross, c),
                let refunds = convert(c.refunds, c)
            else { continue }
            add(i, "revenue", .money(gross - refunds), e, detail: c.refundKind)
        }
        measures += (0..<longest).flatMap { ["paying_\($0)", "retention_\($0)"] }
        for i in values.indices where values[i]["customers"] != nil {
            for k in 0..<(grid.periods.count - i) where observed(grid.periods[i + k]) != nil {
                if values[i]["paying_\(k)"] == nil { values[i]["paying_\(k)"] = .count(0) }
                if case .count(let paying)? = values[i]["paying_\(k)"], case .count(let customers)? = values[i]["customers"] {
                    values[i]["retention_\(k)"] = .ratio(paying, customers)
                }
            }
            if values[i]["revenue"] == nil { values[i]["revenue"] = .money(0) }
            if case .money(let revenue)? = values[i]["revenue"], case .count(let customers)? = values[i]["customers"] {
                values[i]["ltv"] = .money(Money.scale(revenue, by: 1, over: Int128(customers)))
            }
        }
    }

    // MARK: The answer

    func finish() -> ChartAnswer {
        let rates = missingRateCounts.keys.sorted().map { key in
            let parts = key.split(separator: " ")
            return MissingRate(currency: String(parts[0]), day: String(parts[1]), transactions: missingRateCounts[key]!)
        }
        let prices = missingPrices.keys.sorted().map { key in
            let (product, storefront, n) = missingPrices[key]!
            return MissingPrice(productID: product, storefront: storefront, transactions: n)
        }
        return ChartAnswer(
            chart: q.chart, currency: currency, resolution: grid.resolution, zone: q.zone.name, periods: grid.periods,
            measures: measures, values: values, contributions: contributions, missingRates: rates, missingPrices: prices,
            untaxedStorefronts: q.chart == .revenue ? untaxed.sorted() : [])
    }
}
