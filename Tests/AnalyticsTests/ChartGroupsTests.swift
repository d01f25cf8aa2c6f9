import Entitlements
import ReceiptTesting
import Testing

@testable import Analytics

/// Charts split by a dimension (`group_by`): each group's figures by hand, and in a sample business
/// every additive figure of every chart is the sum of its groups'.
@Suite struct ChartGroupsTests {
    @Test func revenueByCountry() throws {
        let engine = ChartEngine(
            ledger: Ledger(entries: ChartEngineTests.revenueLedger), rates: ChartEngineTests.rates,
            settings: ChartEngineTests.settings)
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
}
