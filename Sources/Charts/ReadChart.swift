package import Analytics
import Clocks
package import DatabaseEngine
import Entitlements
import Identifiers
import Logging
package import ReceiptCore
import Resilience
import Storage

/// The subscription metrics (`GET /v1/admin/charts/{chart}`; its drill-down in DrillChart.swift):
/// the rollups, or the ledger of one environment read from storage, the loaded exchange rates, and
/// Analytics' pure engine.
package struct ReadChart: UseCase, Sendable {
    package let context: UseCaseContext
    let settings: AnalyticsSettings
    /// One chart is summed at a time; the others wait their turn.
    private let gate = ConcurrencyLimit(1)
    /// The loaded rates as last parsed, by revision: a drill-down page needs them, and reading
    /// and parsing every rate was a fifth of its time.
    private let parsedRates = ParsedRates()
    /// Holders read a page at a time.
    let holdersPerPage: Int

    package init(context: UseCaseContext, settings: AnalyticsSettings, holdersPerPage: Int = 2_000) {
        self.holdersPerPage = holdersPerPage
        self.context = context
        self.settings = settings
    }

    /// What a chart is asked for. `from`/`to` default to the last 30 days to now.
    package struct Input: Sendable {
        package var chart: Chart
        package var from: Int64?
        package var to: Int64?
        package var resolution: Resolution
        package var zone: ZoneOffset
        package var currency: String?
        package var filters: ChartFilters
        /// The conversion or lifetime window of a chart of customers by first seen (its default when nil).
        package var window: ChartWindow?
        /// Split the figures by a dimension; a drill-down into one group's figure names the group.
        package var groupBy: ChartDimension?
        package var group: String?

        package init(
            chart: Chart, from: Int64? = nil, to: Int64? = nil, resolution: Resolution = .day, zone: ZoneOffset = .utc,
            currency: String? = nil, filters: ChartFilters = ChartFilters(), window: ChartWindow? = nil,
            groupBy: ChartDimension? = nil, group: String? = nil
        ) {
            self.window = window
            self.groupBy = groupBy
            self.group = group
            self.chart = chart
            self.from = from
            self.to = to
            self.resolution = resolution
            self.zone = zone
            self.currency = currency
            self.filters = filters
        }
    }

    package func callAsFunction(_ input: Input) async throws(ReceiptError) -> ChartAnswer {
        var answer = try await answer(try prepare(input))
        answer.simulatedRates = settings.simulatedRates
        return answer
    }

    private func answer(_ query: ChartQuery) async throws(ReceiptError) -> ChartAnswer {
        if Rollup.answers(query, reportingCurrency: settings.reportingCurrency), let answer = try await fromRollups(query) {
            return answer
        }
        let sum: ChartSum
        do { sum = try ChartSum(query, currency: query.currency ?? settings.reportingCurrency) } catch { throw Self.error(error) }
        return try await sumEveryHolder(query, rates: try await rates(), into: sum.running()).answer()
    }

    /// The query's chart from the rollups (``KeepRollups``), when they are built for the current
    /// settings and rates: the sums of its chart by day, and today's exact items; only `measure`'s
    /// figures right when given, and of the query's ``ChartQuery/group`` alone when `oneGroup`
    /// (the answer's whole is that group's; its other groups are not read). Nil while they are
    /// being rebuilt.
    func fromRollups(_ query: ChartQuery, measure: String? = nil, oneGroup: Bool = false) async throws(ReceiptError)
        -> ChartAnswer?
    {
        let settings = settings
        let (lastDay, cohortsFrom): (Int64, Int64)
        do {
            lastDay = try Rollup.lastDay(of: query)
            cohortsFrom = try Rollup.firstCohortDay(of: query)
        } catch { throw Self.error(error) }
        let kept: ([RollupRow], [ChartItem]?, Int64)?
        do {
            kept = try await database.read { db in
                let store = RollupStore(db)
                guard let state = try KeepRollups.ready(db, for: settings) else { return nil }
                let environment = query.filters.environment
                let rows = try store.rows(
                    environment: environment, chart: query.chart, measures: Rollup.keptMeasures(for: query, measure: measure),
                    throughDay: lastDay, cohortsFrom: cohortsFrom, split: RollupSplit(query.groupBy) ?? .none,
                    group: oneGroup ? query.group : nil)
                // Today's exact items, unless the rows alone are exact (a past day's drill-down figure).
                let today =
                    try Rollup.needsMoments(query, rows: rows)
                    ? try store.moments(
                        environment: environment, chart: query.chart, day: CivilTime.split(query.now).0, measure: measure)
                    : nil
                return (rows, today, try store.pendingChanges(after: state.changesThrough))
            }
        } catch {
            logger.error("the chart rollups could not be read", metadata: ["error": "\(error)"])
            throw .internalFault
        }
        guard let (rows, today, pending) = kept else { return nil }
        do {
            var answer = try Rollup.answer(query, currency: settings.reportingCurrency, rows: rows, today: today)
            answer.pendingChanges = pending
            return answer
        } catch {
            throw Self.error(error)
        }
    }

    /// The query's chart over every holder of the environment, a page of holders at a time: each
    /// holder's items (their own ledger is all a figure needs of them) added to the running sum
    /// and let go, so memory holds a page, whatever the environment's size. One chart at a time.
    func sumEveryHolder(_ query: ChartQuery, rates: ExchangeRates, into running: ChartSum.Running)
        async throws(ReceiptError) -> ChartSum.Running
    {
        let result = await gate.run { () async -> Result<ChartSum.Running, ReceiptError> in
            do throws(ReceiptError) {
                return .success(try await sumPages(query, rates: rates, into: running))
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    private func sumPages(_ query: ChartQuery, rates: ExchangeRates, into running: ChartSum.Running) async throws(ReceiptError)
        -> ChartSum.Running
    {
        var running = running
        var after: String?
        // Split by environment: every environment's holdings (each item in its own's group).
        let environment: String? = query.groupBy == .environment ? nil : query.filters.environment
        repeat {
            let page: (last: String?, holdings: AnalyticsStore.Holdings)
            do {
                let (from, limit) = (after, holdersPerPage)
                page = try await database.read { db in
                    try AnalyticsStore(db).holders(environment: environment, after: from, limit: limit)
                }
            } catch {
                logger.error("the ledger could not be read", metadata: ["error": "\(error)"])
                throw .internalFault
            }
            after = page.last
            let byHolder = Self.ledgers(page.holdings)
            for holder in byHolder.keys.sorted() {
                running.add(ChartEngine(ledger: byHolder[holder]!, rates: rates, settings: settings).items(query))
            }
        } while after != nil
        return running
    }

    /// The query asked, at the clock's now.
    func prepare(_ input: Input) throws(ReceiptError) -> ChartQuery {
        let now = clock.now()
        let to = input.to ?? now + 1
        let from = input.from ?? to - 30 * 86_400_000
        guard from < to else { throw .invalidRequest("`from` must be before `to`.") }
        var filters = input.filters
        // One environment's figure of a chart split by environment is that environment's chart.
        if input.groupBy == .environment, let group = input.group { filters.environment = group }
        return ChartQuery(
            chart: input.chart, from: from, to: to, resolution: input.resolution, zone: input.zone, currency: input.currency,
            filters: filters, now: now, window: input.window, groupBy: input.groupBy, group: input.group)
    }

    /// The loaded exchange rates: what summing ledgers needs (the rollups were summed with them).
    func rates() async throws(ReceiptError) -> ExchangeRates {
        do {
            return try await database.read { [parsedRates, settings] db in
                let store = AnalyticsStore(db)
                return try parsedRates.rates(revision: try store.ratesRevision()) {
                    ExchangeRates(Self.rows(try store.rates()), simulated: settings.simulatedRates)
                }
            }
        } catch {
            logger.error("the exchange rates could not be read", metadata: ["error": "\(error)"])
            throw .internalFault
        }
    }

    /// Each person's ledger from rows read together: everyone with a subscriber row has one, with
    /// or without purchases. People and purchases by their ids' bytes, as the database keeps them.
    static func ledgers(_ holdings: AnalyticsStore.Holdings) -> [Identifier: Ledger] {
        var byHolder: [Identifier: Ledger] = [:]
        var holderOf: [Identifier: Identifier] = [:]
        for c in holdings.customers {
            let user = Identifier(c.appUserID)
            byHolder[user, default: Ledger(entries: [])].customers[user] = Ledger.Customer(
                firstSeen: c.firstSeen, bundleID: c.bundleID, environments: c.environments)
        }
        for held in holdings.purchases {
            let user = Identifier(held.appUserID)
            byHolder[user, default: Ledger(entries: [])].entries.append(
                Ledger.Entry(appUserID: held.appUserID, bundleID: held.bundleID, purchase: held.purchase))
            holderOf[Identifier(held.purchase.originalTransactionID)] = user
        }
        for r in holdings.renewals {
            let original = Identifier(r.originalTransactionID)
            guard let holder = holderOf[original] else { continue }
            byHolder[holder]?.renewals[original] = Ledger.RenewalState(
                autoRenewStatus: r.autoRenewStatus, isInBillingRetryPeriod: r.isInBillingRetryPeriod,
                gracePeriodExpiresDate: r.gracePeriodExpiresDate, storeState: r.storeState)
        }
        for r in holdings.refundRequests {
            guard let holder = holderOf[Identifier(r.originalTransactionID)] else { continue }
            byHolder[holder]?.refundRequests.append(r.event)
        }
        return byHolder
    }

    /// Stored rates as the engine takes them; a row that no longer reads (never written so) is skipped.
    static func rows(_ stored: [AnalyticsStore.RateRow]) -> [ExchangeRates.Row] {
        stored.compactMap { r in
            guard let day = ECBReferenceRates.day(r.day), let rate = Money.decimal(r.perEuro, places: 6) else { return nil }
            return ExchangeRates.Row(day: day, currency: r.currency, perEuro: rate)
        }
    }

    static func error(_ e: ChartError) -> ReceiptError {
        switch e {
        case .tooManyPeriods:
            .invalidRequest(
                "The range has more than \(PeriodGrid.maxPeriods) periods: choose a coarser resolution or a shorter range.")
        case .unknownPeriod(let p): .invalidRequest("`period` \(p) is not the start of a period of this chart.")
        case .unknownMeasure(let m): .invalidRequest("`measure` \(m) is not a measure of this chart.")
        case .derivedMeasure(let m, let parts):
            .invalidRequest("`\(m)` is computed from \(parts.joined(separator: " and ")): drill into those.")
        }
    }
}

/// `receiptd rates import`: the ECB's reference-rate CSV into storage, in one transaction.
package enum ImportRates {
    package struct Report: Sendable, Equatable {
        package var rates: Int
        package var changed: Int
        package var currencies: Int
        package var firstDay: String?
        package var lastDay: String?
    }

    package static func run(csv: String, into db: Database) throws -> Report {
        let rows = try ECBReferenceRates.parse(csv)
        let stored = rows.map { row in
            let (y, m, d) = CivilTime.date(fromDays: row.day)
            return AnalyticsStore.RateRow(
                day: PeriodGrid.label(y, m, d), currency: row.currency, perEuro: Self.text(row.perEuro))
        }
        let changed = try db.transaction(durable: true) { try AnalyticsStore(db).importRates(stored) }
        let days = stored.map(\.day).sorted()
        return Report(
            rates: stored.count, changed: changed, currencies: Set(stored.map(\.currency)).count, firstDay: days.first,
            lastDay: days.last)
    }

    /// Six decimal places, trailing zeros dropped: 1,082,300 → `1.0823`.
    static func text(_ perEuro: Int64) -> String {
        var fraction = String(perEuro % ExchangeRates.scale)
        fraction = String(repeating: "0", count: 6 - fraction.count) + fraction
        while fraction.hasSuffix("0") { fraction.removeLast() }
        return "\(perEuro / ExchangeRates.scale)" + (fraction.isEmpty ? "" : "." + fraction)
    }
}
