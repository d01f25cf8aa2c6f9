import Entitlements
import ReceiptTesting
import Testing

@testable import Analytics

/// Charts split by a dimension (`group_by`): each group's figures by hand, and in a sample business
/// every additive figure of every chart is the sum of its groups'.
@Suite struct ChartGroupsTests {
    /// The engine over ``ChartEngineTests/revenueLedger``.
    private static let revenueEngine = ChartEngine(
        ledger: Ledger(entries: ChartEngineTests.revenueLedger), rates: ChartEngineTests.rates,
        settings: ChartEngineTests.settings)

    @Test func revenueByCountry() throws {
        let engine = Self.revenueEngine
        var q = ChartEngineTests.months(.revenue, now: at(2026, 3, 1))
        q.groupBy = .country
        let a = try engine.answer(q)
        #expect(a.groupBy == .country && a.groups.map(\.value) == ["DEU", "GBR", "USA"])
        func gross(_ group: String, _ period: Int) -> Measure? { a.groups.first { $0.value == group }?.figures[period, "gross"] }
        // January: Bob's 9.990 EUR in Germany (11.988 USD); Carol's GBP sale has no rate; A and D in the USA.
        #expect(gross("DEU", 0) == .money(11_988) && gross("GBR", 0) == .money(0) && gross("USA", 0) == .money(130_000))
        #expect(a.values[0]["gross"] == .money(141_988))
        // One group's drill-down lists that group's contributions alone.
        q.group = "USA"
        let drill = try engine.drill(q, period: "2026-01-01", measure: "gross")
        #expect(drill.contributions.map(\.transactionID) == ["a1", "d1"] && drill.value == .money(130_000))
    }

    /// A group is listed when something of it shows in the range: from February, revenue by
    /// country has only the USA (Alice's renewal); Bob's German and Carol's British sales were in
    /// January. MRR, held at each month's end, is Dave's and Carol's at January's (Bob's was refunded on
    /// the 20th: Germany has none); from March, the USA's alone (Carol's ended in February).
    @Test func aGroupIsListedWhenSomethingOfItShowsInTheRange() throws {
        let engine = Self.revenueEngine
        var q = ChartEngineTests.months(.revenue, now: at(2026, 4, 1))
        q.groupBy = .country
        #expect(try engine.answer(q).groups.map(\.value) == ["DEU", "GBR", "USA"])
        q.from = at(2026, 2, 1)
        #expect(try engine.answer(q).groups.map(\.value) == ["USA"])
        var mrr = ChartEngineTests.months(.mrr, now: at(2026, 4, 1))
        mrr.groupBy = .country
        #expect(try engine.answer(mrr).groups.map(\.value) == ["GBR", "USA"])
        mrr.from = at(2026, 3, 1)
        #expect(try engine.answer(mrr).groups.map(\.value) == ["USA"])
    }

    @Test func aCustomerIsInTheGroupOfTheirFirstPurchase() throws {
        var q = CustomersTests.months(.newCustomers)
        q.groupBy = .product
        let a = try CustomersTests.engine.answer(q)
        // Ann bought nothing (unknown); Erin's and Frank's first were monthly trials; Gus's coins.
        #expect(a.groups.map(\.value) == ["coins", "monthly", "unknown"])
        #expect(a.groups.map { $0.figures[0, "new_customers"] } == [.count(1), .count(2), .count(1)])
        var paying = CustomersTests.months(.conversionToPaying, window: .unbounded)
        paying.groupBy = .product
        let conversions = try CustomersTests.engine.answer(paying)
        // Gus's coins are his first purchase and his conversion: one group, whatever the window.
        #expect(conversions.groups.first { $0.value == "coins" }?.figures[0, "new_paying_customers"] == .count(1))
    }

    @Test(arguments: [5, 6] as [UInt64])
    func everyAdditiveFigureIsTheSumOfItsGroups(seed: UInt64) throws {
        let (facts, owners) = SampleBusiness.business(seed: seed)
        let engine = ChartEngine(
            ledger: SampleBusiness.ledger(facts, owners: owners, customers: SampleBusiness.customers(seed: seed)),
            rates: RollupTests.rates, settings: SampleBusiness.settings)
        let now = SampleBusiness.origin + 150 * 86_400_000
        var checked = 0
        for chart in Chart.allCases {
            for dimension in ChartDimension.allCases where chart.splits(by: dimension) {
                let q = ChartQuery(
                    chart: chart, from: SampleBusiness.origin - 86_400_000, to: now, resolution: .month, now: now,
                    groupBy: dimension)
                let a = try engine.answer(q)
                for measure in a.measures where chart.parts(of: measure) == nil {
                    for i in a.periods.indices {
                        // By environment too: the whole is every environment's (a sandbox tester among them).
                        var sum: Measure?
                        for g in a.groups {
                            guard let m = g.figures[i, measure] else { continue }
                            sum = sum.map { $0 + m } ?? m
                        }
                        let whole = a.figures[i, measure]
                        if case .ratio? = whole { continue }
                        #expect(
                            sum == whole || sum == nil && (whole == .count(0) || whole == .money(0)),
                            "\(chart) \(measure) by \(dimension)")
                        checked += 1
                    }
                }
            }
        }
        #expect(checked > 1000)
    }

    /// Ids are their bytes (Docs/api.md "Identifiers"): in a sample business whose people,
    /// purchases, products and apps come in pairs of two spellings of one text (``Respelling``),
    /// every chart, whole, filtered by app or product and split by each dimension, has the figures,
    /// groups, missing prices and drill-downs of the business as first spelt. With `String` keys,
    /// the pairs' customers, subscriptions, products and apps were one each.
    @Test(arguments: [5, 40] as [UInt64])
    func twoSpellingsOfAnIdAreTwoIds(seed: UInt64) throws {
        let (facts, owners) = SampleBusiness.business(seed: seed)
        let ledger = SampleBusiness.ledger(facts, owners: owners, customers: SampleBusiness.customers(seed: seed))
        let spell = Respelling(ledger, settings: SampleBusiness.settings)
        let respelt = spell(ledger)
        #expect(Respelling.merged(respelt.entries.map(\.appUserID)) >= 10)
        #expect(Respelling.merged(respelt.entries.map(\.purchase.originalTransactionID)) >= 10)
        #expect(Respelling.merged(respelt.entries.map(\.purchase.productID)) >= 1)
        #expect(Respelling.merged(respelt.entries.map(\.bundleID)) >= 1)
        let engine = ChartEngine(ledger: ledger, rates: RollupTests.rates, settings: SampleBusiness.settings)
        let other = ChartEngine(ledger: respelt, rates: RollupTests.rates, settings: spell(SampleBusiness.settings))
        let now = SampleBusiness.origin + 150 * 86_400_000
        var drills = 0
        for chart in Chart.allCases {
            for filters in [ChartFilters(), ChartFilters(app: "com.y"), ChartFilters(product: "monthly")] {
                for dimension in [nil] + ChartDimension.allCases.filter(chart.splits(by:)) {
                    let q = ChartQuery(
                        chart: chart, from: SampleBusiness.origin - 86_400_000, to: now, resolution: .month,
                        filters: filters, now: now, groupBy: dimension)
                    var asked = q
                    asked.filters.app = filters.app.map { spell($0) }
                    asked.filters.product = filters.product.map { spell($0) }
                    let (a, b) = (try engine.answer(q), try other.answer(asked))
                    let what = "\(chart) \(filters) by \(String(describing: dimension))"
                    #expect(b.figures == a.figures, "\(what)")
                    #expect(b.leftOut == a.leftOut, "\(what)")
                    #expect(b.groups.count == a.groups.count, "\(what)")
                    let groups = Dictionary(uniqueKeysWithValues: a.groups.map { ($0.value, $0.figures) })
                    for g in b.groups { #expect(groups[spell.undo(g.value)] == g.figures, "\(what): \(g.value)") }
                    #expect(
                        b.missingPrices.map { "\(spell.undo($0.productID)) \($0.storefront ?? "") \($0.transactions)" }.sorted()
                            == a.missingPrices.map { "\($0.productID) \($0.storefront ?? "") \($0.transactions)" }.sorted(),
                        "\(what)")
                    // The drill-down of the whole's first figure that is not zero, of a measure summed.
                    guard dimension == nil,
                        let (i, measure) = a.periods.indices.lazy.flatMap({ i in
                            a.measures.lazy.filter { chart.parts(of: $0) == nil }.map { (i, $0) }
                        }).first(where: { a.figures[$0.0, $0.1].map { $0 != .count(0) && $0 != .money(0) } ?? false })
                    else { continue }
                    let label = a.periods[i].label
                    let (x, y) = (
                        try engine.drill(q, period: label, measure: measure),
                        try other.drill(asked, period: label, measure: measure)
                    )
                    func rows(_ d: Drill, _ undo: (String) -> String) -> [String] {
                        d.contributions.map {
                            "\(undo($0.appUserID)) \(undo($0.originalTransactionID)) \(undo($0.transactionID ?? "")) \($0.value)"
                        }.sorted()
                    }
                    #expect(rows(y, spell.undo) == rows(x, { $0 }), "\(what): \(measure) in \(label)")
                    drills += 1
                }
            }
        }
        #expect(drills >= Chart.allCases.count)
    }
}
