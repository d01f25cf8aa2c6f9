import Entitlements
import Identifiers
import ReceiptTesting
import Testing

@testable import Analytics

private let day: Int64 = 86_400_000

/// A drill-down that reads only the holders marked for a figure, mark by mark, finds exactly the
/// contributions the engine finds in the whole ledger, each once: every chart and drillable
/// measure, every begun period by week and month and a fifth of them by day, in UTC and offset
/// zones, with filters, the marks written up to forty days before the clock.
@Suite("Rollup marks")
struct RollupMarksTests {
    static let berlin = ZoneOffset(name: "Europe/Berlin") { _ in 3_600_000 }
    static let apia = ZoneOffset(name: "Pacific/Apia") { _ in 13 * 3_600_000 }

    @Test(arguments: [39, 40, 41] as [UInt64])
    func markedHoldersMakeEveryFigure(seed: UInt64) async throws {
        let (mismatches, figures, contributions) = try await onTheHeavyLane { try Self.compare(seed: seed) }
        for mismatch in mismatches { Issue.record(Comment(rawValue: mismatch)) }
        #expect(figures > 1_000 && contributions > 3_000, "\(figures) figures, \(contributions) contributions")
    }

    /// Every mismatch found (a chart's figures or a drill-down's contributions), with how many
    /// figures and contributions were compared.
    static func compare(seed: UInt64) throws -> (mismatches: [String], figures: Int, contributions: Int) {
        let (facts, owners) = SampleBusiness.business(seed: seed)
        let ledger = SampleBusiness.ledger(facts, owners: owners, customers: SampleBusiness.customers(seed: seed))
        let (settings, rates) = (RollupTests.settings, RollupTests.rates)
        let engine = ChartEngine(ledger: ledger, rates: rates, settings: settings)
        let holders = RollupTests.holders(ledger)
        var rng = SeededGenerator(seed: seed)
        let origin = SampleBusiness.origin
        var (mismatches, figures, contributions) = ([String](), 0, 0)
        for round in 0..<3 {
            let now = origin + Int64.random(in: 30..<250, using: &rng) * day + Int64.random(in: 0..<day, using: &rng)
            let written = now - Int64.random(in: 0...(40 * day), using: &rng)
            // Each holder's marks, as the keeper keeps them from their rows.
            var marked: [(day: Int64, family: RollupMark.Family, user: String)] = []
            for holder in holders {
                let rows = Rollup.holder(holder, settings: settings, rates: rates, writtenAt: written).rows
                for mark in RollupMark.marks(of: rows) where mark.environment == "production" {
                    marked.append((mark.day, mark.family, holder.entries.first?.appUserID ?? holder.customers.keys.first!.string))
                }
            }
            marked.sort { ($0.day, $0.user) < ($1.day, $1.user) }
            let zone = [ZoneOffset.utc, Self.berlin, Self.apia][(round + Int(seed)) % 3]
            for chart in Chart.allCases {
                for resolution in Resolution.allCases {
                    let filters = round == 2 ? ChartFilters(app: "com.y") : ChartFilters()
                    let q = ChartQuery(
                        chart: chart, from: origin - 3 * day, to: now + 20 * day, resolution: resolution, zone: zone,
                        filters: filters, now: now)
                    let sum = try ChartSum(q, currency: "EUR")
                    let items = Dictionary(
                        uniqueKeysWithValues: holders.map {
                            (
                                $0.entries.first?.appUserID ?? $0.customers.keys.first!.string,
                                ChartEngine(ledger: $0, rates: rates, settings: settings).items(q)
                            )
                        })
                    let everyone = items.keys.sorted().flatMap { items[$0]! }
                    let answer = sum.answer(everyone)
                    if answer.figures != (try engine.answer(q)).figures {
                        mismatches.append("\(chart) by \(resolution): figures")
                    }
                    var measures = chart.measures.filter { chart.parts(of: $0) == nil }
                    if chart.hasCohortTable { measures += (0..<4).map { "paying_\($0)" } }
                    // By day, every fifth period (and all by week and month): each drill-down sums everyone.
                    for (n, period) in answer.periods.enumerated()
                    where period.start <= now && (resolution != .day || n % 5 == (round + Int(seed)) % 5) {
                        for measure in measures {
                            let expected = try sum.drill(everyone, period: period.label, measure: measure).contributions
                            var running = try sum.drilling(period: period.label, measure: measure)
                            if let target = try sum.target(period: period.label, measure: measure) {
                                for mark in marked
                                where mark.family == target.family && target.days.contains(mark.day) {
                                    running.add(items[mark.user]!.filter { target.markDay(of: $0) == mark.day })
                                }
                            }
                            let found = try running.drill().contributions
                            if found.map(Self.key).sorted() != expected.map(Self.key).sorted() {
                                mismatches.append("\(chart) \(measure) of \(period.label) by \(resolution)")
                            }
                            figures += 1
                            contributions += expected.count
                        }
                    }
                }
            }
        }
        return (mismatches, figures, contributions)
    }

    static func key(_ c: Contribution) -> String {
        "\(c.period) \(c.measure) \(c.appUserID) \(c.transactionID ?? "") \(c.value) \(c.detail ?? "")"
    }

    /// A stock's months from its first day to its last, matched up across a renewal at another
    /// price and a gap; a flow's day; a cohort's day once (not its per-grain copies); a day's
    /// changes as one (two rows of a line, settled and not, that cancel mark nothing).
    @Test func marksOfRows() {
        func row(
            _ measure: String, _ kind: ChartItem.Kind, at: Int64, value: Int64, cohort: Int64 = RollupRow.noCohort,
            settled: Bool = false
        ) -> RollupRow {
            RollupRow(
                key: .init(
                    environment: "production", chart: .mrr, measure: measure, kind: kind, settled: settled, bundleID: "a",
                    store: "app_store",
                    note: "", atDay: at, untilDay: kind == .flow ? at : .max, validFromDay: .min, validUntilDay: .max,
                    cohortDay: cohort),
                value: value, items: 1)
        }
        // 2026-01-30 to 2026-03-02 at 5, then 7 until 2026-03-20; again 2026-06-10 to 2026-06-12.
        let jan30: Int64 = 20_483
        let rows = [
            row("mrr", .stock, at: jan30, value: 5), row("mrr", .stock, at: jan30 + 31, value: 2),
            row("mrr", .stock, at: jan30 + 49, value: -7), row("mrr", .stock, at: jan30 + 131, value: 7),
            row("mrr", .stock, at: jan30 + 133, value: -7), row("gross", .flow, at: jan30 + 1, value: 9),
            row("", .flow, at: jan30 + 2, value: 0), row("paying", .stock, at: jan30, value: 1, cohort: jan30),
            row("paying/month", .stock, at: jan30, value: 1, cohort: jan30 - 29),
            row("actives", .stock, at: jan30 + 200, value: 1, settled: true), row("actives", .stock, at: jan30 + 200, value: -1),
        ]
        let days = RollupMark.marks(of: rows).sorted().map { "\($0.family.rawValue) \($0.day)" }
        // Months: January 20,454, February 20,485, March 20,513, June 20,605.
        #expect(days == ["c 20483", "f 20484", "s 20454", "s 20485", "s 20513", "s 20605"])
    }
}
