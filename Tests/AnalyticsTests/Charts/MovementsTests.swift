import Entitlements
import ReceiptTesting
import Testing

@testable import Analytics

/// The movement charts by hand, and their balance (start + movements = end) in every period of a
/// sample business, at any clock.
@Suite struct MovementsTests {
    /// Carl: a year at 120.00 from December (10.00 a month). Alice: 10.00 monthly from January 5th,
    /// renewed, then 20.00 from March 5th. Bob: 9.00 from January 10th, not renewed. Dana: 5.00 from
    /// January 20th, lapsed, back on March 1st.
    static let ledger = [
        sale("c1", user: "carl", original: "c", product: "annual", from: at(2025, 12, 1), to: at(2026, 12, 1), price: 120_000),
        sale("a1", user: "alice", original: "a", from: at(2026, 1, 5), to: at(2026, 2, 5), price: 10_000),
        sale("a2", user: "alice", original: "a", from: at(2026, 2, 5), to: at(2026, 3, 5), price: 10_000),
        sale("a3", user: "alice", original: "a", product: "pro", from: at(2026, 3, 5), to: at(2026, 4, 5), price: 20_000),
        sale("b1", user: "bob", original: "b", from: at(2026, 1, 10), to: at(2026, 2, 10), price: 9000),
        sale("d1", user: "dana", original: "d", from: at(2026, 1, 20), to: at(2026, 2, 20), price: 5000),
        sale("d2", user: "dana", original: "d", from: at(2026, 3, 1), to: at(2026, 4, 1), price: 5000),
    ]

    static func engine(_ entries: [Ledger.Entry] = ledger) -> ChartEngine {
        ChartEngine(ledger: Ledger(entries: entries), rates: ChartEngineTests.rates, settings: ChartEngineTests.settings)
    }

    @Test func mrrMovesByNewReactivatedExpandedAndChurned() throws {
        let a = try Self.engine().answer(ChartEngineTests.months(.mrrMovement, now: at(2026, 4, 1)))
        func column(_ m: String) -> [Measure?] { a.values.map { $0[m] } }
        // January: Carl's 10.000 at the start; Alice 10 + Bob 9 + Dana 5 new; 34.000 at the end.
        // February: Bob's 9 and Dana's 5 churn. March: Dana back (+5), Alice 10 → 20 (+10).
        #expect(column("starting_mrr") == [.money(10_000), .money(34_000), .money(20_000)])
        #expect(column("new_mrr") == [.money(24_000), .money(0), .money(0)])
        #expect(column("churned_mrr") == [.money(0), .money(14_000), .money(0)])
        #expect(column("reactivation_mrr") == [.money(0), .money(0), .money(5000)])
        #expect(column("expansion_mrr") == [.money(0), .money(0), .money(10_000)])
        #expect(column("contraction_mrr") == [.money(0), .money(0), .money(0)])
        #expect(column("net_mrr_movement") == [.money(24_000), .money(-14_000), .money(15_000)])
        #expect(column("ending_mrr") == [.money(34_000), .money(20_000), .money(35_000)])
        #expect(a.leftOut == [0, 0, 0])
        // A subscription no one priced counts among the actives, not in MRR: its periods say so.
        var unpriced = Self.ledger
        unpriced.append(sale("u1", user: "uma", original: "u", from: at(2026, 2, 10), to: at(2026, 3, 10)))
        let short = try Self.engine(unpriced).answer(ChartEngineTests.months(.mrr, now: at(2026, 4, 1)))
        #expect(short.values[1]["subscriptions"] == .count(3) && short.values[1]["mrr"] == .money(20_000))
        #expect(short.leftOut == [0, 1, 0] && short.missingPrices.map(\.productID) == ["monthly"])
        // Alice's drop back to 10.00 in April would be a contraction.
        var down = Self.ledger
        down.append(sale("a4", user: "alice", original: "a", from: at(2026, 4, 5), to: at(2026, 5, 5), price: 10_000))
        let april = try Self.engine(down).answer(
            ChartQuery(chart: .mrrMovement, from: at(2026, 4, 1), to: at(2026, 5, 1), resolution: .month, now: at(2026, 4, 30)))
        // April 1st: Dana churns (5); April 5th: Alice 20 → 10.
        #expect(april.values[0]["contraction_mrr"] == .money(10_000) && april.values[0]["churned_mrr"] == .money(5000))
        let drill = try Self.engine().drill(
            ChartQuery(chart: .mrrMovement, from: at(2026, 1, 1), to: at(2026, 4, 1), resolution: .month, now: at(2026, 4, 1)),
            period: "2026-03-01", measure: "expansion_mrr")
        #expect(drill.contributions.map(\.transactionID) == ["a3"] && drill.value == .money(10_000))
    }

    @Test func activeSubscriptionsAndTrialsMove() throws {
        let a = try Self.engine().answer(ChartEngineTests.months(.activesMovement, now: at(2026, 4, 1)))
        func column(_ m: String) -> [Measure?] { a.values.map { $0[m] } }
        #expect(column("starting_actives") == [.count(1), .count(4), .count(2)])
        #expect(column("new_actives") == [.count(3), .count(0), .count(0)])
        #expect(column("churned_actives") == [.count(0), .count(2), .count(0)])
        #expect(column("resubscribed_actives") == [.count(0), .count(0), .count(1)])
        #expect(column("net_actives_movement") == [.count(3), .count(-2), .count(1)])
        #expect(column("ending_actives") == [.count(4), .count(2), .count(3)])
        // Erin's trial converts, Hank's ends unpaid (both in January), Gina's runs into April.
        let trials = [
            sale("e0", user: "erin", original: "e", from: at(2026, 1, 1), to: at(2026, 1, 8), trial: true),
            sale("e1", user: "erin", original: "e", from: at(2026, 1, 8), to: at(2026, 2, 8), price: 5000),
            sale("h0", user: "hank", original: "h", from: at(2026, 1, 3), to: at(2026, 1, 10), trial: true),
            sale("g0", user: "gina", original: "g", from: at(2026, 3, 28), to: at(2026, 4, 4), trial: true),
        ]
        let t = try Self.engine(trials).answer(ChartEngineTests.months(.trialsMovement, now: at(2026, 4, 1)))
        #expect(t.values.map { $0["new_trials"] } == [.count(2), .count(0), .count(1)])
        #expect(t.values.map { $0["expired_trials"] } == [.count(2), .count(0), .count(0)])
        #expect(t.values.map { $0["ending_trials"] } == [.count(0), .count(0), .count(1)])
        #expect(t.values.map { $0["starting_trials"] } == [.count(0), .count(0), .count(0)])
    }

    /// In every begun period of a sample business (gaps, grace periods, upgrades, refunds, trials,
    /// missing rates and prices), by day, week and month, at clocks anywhere: the start plus the
    /// net movement is the end; the net is its parts; the end is the stock chart's own figure, and
    /// the next period starts where this one ended.
    @Test(arguments: [3, 4, 5] as [UInt64])
    func movementsBalance(seed: UInt64) throws {
        let (facts, owners) = SampleBusiness.business(seed: seed)
        let engine = ChartEngine(
            ledger: SampleBusiness.ledger(facts, owners: owners), rates: RollupTests.rates, settings: SampleBusiness.settings)
        var rng = SeededGenerator(seed: seed)
        var checked = 0
        for _ in 0..<6 {
            let now = SampleBusiness.origin + Int64.random(in: 0..<(300 * 86_400_000), using: &rng)
            for resolution in Resolution.allCases {
                func q(_ chart: Chart) -> ChartQuery {
                    ChartQuery(
                        chart: chart, from: SampleBusiness.origin - 86_400_000, to: now + 40 * 86_400_000, resolution: resolution,
                        now: now)
                }
                let stocks: [(Chart, String, Chart, String, [String], [String])] = [
                    (
                        .mrrMovement, "mrr", .mrr, "mrr", ["new_mrr", "reactivation_mrr", "expansion_mrr"],
                        ["contraction_mrr", "churned_mrr"]
                    ),
                    (
                        .activesMovement, "actives", .actives, "subscriptions", ["new_actives", "resubscribed_actives"],
                        ["churned_actives"]
                    ),
                    (.trialsMovement, "trials", .actives, "trials", ["new_trials"], ["expired_trials"]),
                ]
                for (chart, name, stockChart, stockMeasure, up, down) in stocks {
                    let a = try engine.answer(q(chart))
                    let stock = try engine.answer(q(stockChart))
                    for (i, p) in a.periods.enumerated() where p.start <= now {
                        let row = a.values[i]
                        func n(_ m: String) -> Int64 {
                            switch row[m] {
                            case .count(let v)?, .money(let v)?: v
                            default: Int64.min
                            }
                        }
                        let net = n("net_\(name)_movement")
                        let at = "\(chart) \(resolution) \(p.label) now \(now)"
                        #expect(n("starting_\(name)") + net == n("ending_\(name)"), "\(at)")
                        #expect(up.map(n).reduce(0, +) - down.map(n).reduce(0, +) == net, "\(chart) \(p.label)")
                        #expect(row["ending_\(name)"] == stock.values[i][stockMeasure], "\(chart) \(p.label)")
                        if i + 1 < a.periods.count, a.periods[i + 1].start <= now {
                            #expect(a.values[i + 1]["starting_\(name)"] == row["ending_\(name)"], "\(chart) \(p.label)")
                        }
                        checked += 1
                    }
                }
            }
        }
        #expect(checked > 1000)
    }
}
