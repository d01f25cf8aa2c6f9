import Analytics
import Clocks
import Entitlements
import Logging
import Storage

/// The subscription metrics (`GET /v1/admin/charts/{chart}` and its drill-down): the ledger of
/// one environment read from storage, the loaded exchange rates, and Analytics' pure engine.
package struct ReadChart: Sendable {
    let database: DatabaseQueue
    let settings: AnalyticsSettings
    let logger: Logger
    let clock: WallClock

    package init(database: DatabaseQueue, settings: AnalyticsSettings, logger: Logger, clock: WallClock) {
        self.database = database
        self.settings = settings
        self.logger = logger
        self.clock = clock
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

        package init(
            chart: Chart, from: Int64? = nil, to: Int64? = nil, resolution: Resolution = .day, zone: ZoneOffset = .utc,
            currency: String? = nil, filters: ChartFilters = ChartFilters()
        ) {
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
        let (engine, query) = try await prepare(input)
        do { return try engine.answer(query) } catch { throw Self.error(error) }
    }

    package func drill(_ input: Input, period: String, measure: String) async throws(ReceiptError) -> Drill {
        let (engine, query) = try await prepare(input)
        do { return try engine.drill(query, period: period, measure: measure) } catch { throw Self.error(error) }
    }

    private func prepare(_ input: Input) async throws(ReceiptError) -> (ChartEngine, ChartQuery) {
        let now = clock.now()
        let to = input.to ?? now + 1
        let from = input.from ?? to - 30 * 86_400_000
        guard from < to else { throw .invalidRequest("`from` must be before `to`.") }
        let ledger: Ledger
        let rates: ExchangeRates
        do {
            (ledger, rates) = try await database.read { db in
                let store = AnalyticsStore(db)
                let environment = input.filters.environment
                let entries = try store.purchases(environment: environment).map {
                    Ledger.Entry(appUserID: $0.appUserID, bundleID: $0.bundleID, purchase: $0.purchase)
                }
                var renewals: [String: Ledger.RenewalState] = [:]
                for r in try store.renewals(environment: environment) {
                    renewals[r.originalTransactionID] = Ledger.RenewalState(
                        autoRenewStatus: r.autoRenewStatus, isInBillingRetryPeriod: r.isInBillingRetryPeriod,
                        gracePeriodExpiresDate: r.gracePeriodExpiresDate)
                }
                return (Ledger(entries: entries, renewals: renewals), ExchangeRates(Self.rows(try store.rates())))
            }
        } catch {
            logger.error("the ledger could not be read", metadata: ["error": "\(error)"])
            throw .internalFault
        }
        let query = ChartQuery(
            chart: input.chart, from: from, to: to, resolution: input.resolution, zone: input.zone, currency: input.currency,
            filters: input.filters, now: now)
        return (ChartEngine(ledger: ledger, rates: rates, settings: settings), query)
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
