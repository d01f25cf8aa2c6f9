import Analytics
import Clocks
import DatabaseEngine
import Entitlements
import Foundation
import Identifiers
import Logging
import ReceiptCore
import ReceiptTesting
import Storage
import Testing

@testable import Charts

private let day: Int64 = 86_400_000

/// The charts through storage: a business with every hard case (prorated and full refunds,
/// upgrades, gaps and resubscriptions, grace periods, family sharing, trials, offer codes, a
/// commitment plan, four currencies and a day without a rate) saved with ReceiptStore on each
/// dialect, then read by ReadChart, answers exactly what the engine answers from the facts as
/// they were saved. The figures themselves are proven by hand in AnalyticsTests.
@Suite("Charts through storage")
struct ReadChartTests {
    static let origin = SampleBusiness.origin
    static let now = origin + 200 * day

    /// The rates are parsed once per revision, and read again after any import that changes one.
    @Test(arguments: await testDialects())
    func ratesAreReadAgainOnceAnImportChangesOne(dialect: Database.Dialect) async throws {
        try await withScratchDirectory("rates") { dir in
            let queue = try await migratedQueue(dialect, in: dir)
            let read = ReadChart(context: .testing(queue, clock: WallClock { Self.now }), settings: SampleBusiness.settings)
            func load(_ perEuro: String) async throws -> Int {
                try await queue.write { db in
                    try AnalyticsStore(db).importRates([.init(day: "2026-02-02", currency: "USD", perEuro: perEuro)])
                }
            }
            let february2: Int64 = 20_486
            #expect(try await read.rates().perEuro("USD", day: february2) == nil)
            #expect(try await load("1.0823") == 1)
            #expect(try await read.rates().perEuro("USD", day: february2) == 1_082_300)
            #expect(try await load("1.0823") == 0)
            #expect(try await read.rates().perEuro("USD", day: february2) == 1_082_300)
            #expect(try await load("1.1") == 1)
            #expect(try await read.rates().perEuro("USD", day: february2) == 1_100_000)
        }
    }

    @Test(arguments: await testDialects())
    func everyChartThroughStorageIsTheEnginesAnswer(dialect: Database.Dialect) async throws {
        let settings = SampleBusiness.settings
        try await withScratchDirectory("charts") { dir in
            let queue = try await migratedQueue(dialect, in: dir)
            let (facts, owners) = SampleBusiness.business(seed: 39)
            try await queue.write { db in
                let store = ReceiptStore(db)
                for (original, user) in owners.sorted(by: { $0.key < $1.key }) {
                    var mine = facts
                    mine.purchases = facts.purchases.filter { $0.fact.originalTransactionID == original }
                    mine.renewals = facts.renewals.filter { $0.fact.originalTransactionID == original }
                    _ = try store.save(mine, for: user, now: 1)
                }
                try SampleBusiness.storeRefundRequests(facts, in: db)
                _ = try AnalyticsStore(db).importRates(SampleBusiness.rates)
            }
            let customers = try await queue.write { db in try SampleBusiness.storeCustomers(seed: 39, in: db) }
            let ledger = SampleBusiness.ledger(facts, owners: owners, customers: customers)
            let engine = ChartEngine(
                ledger: ledger, rates: ExchangeRates(ReadChart.rows(SampleBusiness.rates)), settings: settings)
            // Seven holders a page: the thirty are read in five pages.
            let read = ReadChart(
                context: .testing(queue, clock: WallClock { Self.now }), settings: settings, holdersPerPage: 7)
            for chart in Chart.allCases {
                for resolution in [Resolution.day, .month] {
                    let input = ReadChart.Input(chart: chart, from: Self.origin, to: Self.now, resolution: resolution)
                    let stored = try await read(input)
                    let q = ChartQuery(chart: chart, from: Self.origin, to: Self.now, resolution: resolution, now: Self.now)
                    let expected = try await onTheHeavyLane { try engine.answer(q) }
                    #expect(stored.figures == expected.figures, "\(chart) by \(resolution)")
                    #expect(stored.measures == expected.measures && stored.missingRates == expected.missingRates)
                    #expect(stored.missingPrices == expected.missingPrices, "\(chart)")
                    #expect(stored.untaxedStorefronts == expected.untaxedStorefronts, "\(chart)")
                }
            }
            // Drill-downs too: the same figure from the same contributions (read holder by holder).
            for (chart, measure) in [
                (Chart.revenue, "gross"), (.mrr, "mrr"), (.churn, "actives_at_start"), (.cohorts, "paying_1"),
            ] {
                let input = ReadChart.Input(chart: chart, from: Self.origin, to: Self.now, resolution: .month)
                let q = ChartQuery(chart: chart, from: Self.origin, to: Self.now, resolution: .month, now: Self.now)
                let period = PeriodGrid.label(2026, 2, 1)
                let stored = try await read.drill(input, period: period, measure: measure).drill
                let expected = try engine.drill(q, period: period, measure: measure)
                #expect(stored.value == expected.value && !expected.contributions.isEmpty, "\(chart) \(measure)")
                func key(_ c: Contribution) -> String { "\(c.appUserID) \(c.transactionID ?? "") \(c.value)" }
                #expect(stored.contributions.map(key).sorted() == expected.contributions.map(key).sorted(), "\(chart)")
            }
            // The business has what it is meant to: money in four currencies, refunds, a missing rate.
            let revenue = try engine.answer(
                ChartQuery(chart: .revenue, from: Self.origin, to: Self.now, resolution: .month, now: Self.now))
            #expect(revenue.values.contains { ($0["refunds"] ?? .money(0)) != .money(0) })
            #expect(!revenue.missingRates.isEmpty)
        }
    }

    /// Ids are their bytes, through storage too: the sample business saved with its people,
    /// purchases, products and apps in pairs of two spellings of one text (``Respelling``) reads,
    /// from the ledger and then from the rollups, what the engine answers for it as first spelt:
    /// every chart by month, whole, for one app and split by product and app; and drill-downs,
    /// into one product's figure too (the holders of a group found in SQL, then summed in Swift).
    @Test(arguments: await testDialects())
    func twoSpellingsOfAnIdAreTwoIdsThroughStorage(dialect: Database.Dialect) async throws {
        let settings = SampleBusiness.settings
        try await withScratchDirectory("spellings") { dir in
            let queue = try await migratedQueue(dialect, in: dir)
            let (facts, owners) = SampleBusiness.business(seed: 39)
            let spell = Respelling(SampleBusiness.ledger(facts, owners: owners), settings: settings)
            let (respelt, holders) = (spell(facts), spell(owners))
            try await queue.write { db in
                let store = ReceiptStore(db)
                for (original, user) in holders {
                    var mine = respelt
                    mine.purchases = respelt.purchases.filter { $0.fact.originalTransactionID.isExactly(original) }
                    mine.renewals = respelt.renewals.filter { $0.fact.originalTransactionID.isExactly(original) }
                    _ = try store.save(mine, for: user, now: 1)
                }
                try SampleBusiness.storeRefundRequests(respelt, in: db)
                _ = try AnalyticsStore(db).importRates(SampleBusiness.rates)
            }
            let stored = try await queue.read { db in try SampleBusiness.storedCustomers(in: db) }
            #expect(stored.count == Set(owners.values).count)
            let customers = Dictionary(uniqueKeysWithValues: stored.map { (Identifier(spell.undo($0.key.string)), $0.value) })
            let engine = ChartEngine(
                ledger: SampleBusiness.ledger(facts, owners: owners, customers: customers),
                rates: ExchangeRates(ReadChart.rows(SampleBusiness.rates)), settings: settings)
            let context = UseCaseContext.testing(queue, clock: WallClock { Self.now })
            let read = ReadChart(context: context, settings: spell(settings), holdersPerPage: 7)
            for fromRollups in [false, true] {
                if fromRollups { _ = try await KeepRollups(context: context, settings: spell(settings)).catchUp() }
                for chart in Chart.allCases {
                    for (app, groupBy) in [(nil, nil), ("com.y", nil), (nil, .product), (nil, .app)]
                        as [(String?, ChartDimension?)]
                    where groupBy.map(chart.splits(by:)) ?? true && (!chart.isCohorted || app == nil) {
                        let asked = ReadChart.Input(
                            chart: chart, from: Self.origin, to: Self.now, resolution: .month,
                            filters: ChartFilters(app: app.map { spell($0) }), groupBy: groupBy)
                        let answer = try await read(asked)
                        let q = ChartQuery(
                            chart: chart, from: Self.origin, to: Self.now, resolution: .month,
                            filters: ChartFilters(app: app), now: Self.now, groupBy: groupBy)
                        let expected = try await onTheHeavyLane { try engine.answer(q) }
                        let what = "\(chart), app \(app ?? "any"), by \(String(describing: groupBy)), rollups \(fromRollups)"
                        #expect(answer.fromRollups == (fromRollups && Rollup.answers(q, reportingCurrency: "EUR")), "\(what)")
                        #expect(answer.figures == expected.figures, "\(what)")
                        #expect(answer.groups.count == expected.groups.count, "\(what)")
                        let groups = Dictionary(uniqueKeysWithValues: expected.groups.map { ($0.value, $0.figures) })
                        for g in answer.groups { #expect(groups[spell.undo(g.value)] == g.figures, "\(what): \(g.value)") }
                    }
                }
                func key(_ c: Contribution, _ undo: (String) -> String) -> String {
                    "\(undo(c.appUserID)) \(undo(c.transactionID ?? "")) \(c.value)"
                }
                for (chart, measure, product, month) in [
                    (Chart.revenue, "gross", nil, 2), (.mrr, "mrr", nil, 2), (.cohorts, "paying_1", nil, 2),
                    (.revenue, "gross", "monthly", 2),
                ] as [(Chart, String, String?, Int64)] {
                    let period = PeriodGrid.label(2026, month, 1)
                    let input = ReadChart.Input(
                        chart: chart, from: Self.origin, to: Self.now, resolution: .month,
                        groupBy: product.map { _ in .product }, group: product.map { spell($0) })
                    var q = ChartQuery(chart: chart, from: Self.origin, to: Self.now, resolution: .month, now: Self.now)
                    (q.groupBy, q.group) = (input.groupBy, product)
                    let drilled = try await read.drill(input, period: period, measure: measure).drill
                    let expected = try engine.drill(q, period: period, measure: measure)
                    #expect(drilled.value == expected.value && !expected.contributions.isEmpty, "\(chart) \(measure)")
                    #expect(
                        drilled.contributions.map { key($0, spell.undo) }.sorted()
                            == expected.contributions.map { key($0, { $0 }) }.sorted(),
                        "\(chart) \(measure), rollups \(fromRollups)")
                }
            }
        }
    }
}
