import Analytics
import Clocks
import DatabaseEngine
import Entitlements
import Foundation
import Logging
import Operations
import ReceiptCore
import ReceiptTesting
import Storage
import Testing

@testable import Charts

private let day: Int64 = 86_400_000

/// Drill-downs through storage, on each dialect: once the rollups are built, the pages of every
/// figure, read a few contributions at a time through the marks, are together exactly what the
/// engine lists from the facts, each once, with the figure on the first page; and stay so after
/// a refund, a renewal and a purchase moving to another holder. An erased holder's marks go.
@Suite("Drill-downs through storage")
struct DrillChartTests {
    @Test(arguments: await testDialects())
    func pagesOfMarkedHoldersAreTheEnginesContributions(dialect: Database.Dialect) async throws {
        try await withScratchDirectory("drill") { dir in
            let queue = try await migratedQueue(dialect, in: dir)
            let clock = TestClock(SampleBusiness.origin + 150 * day + 3_600_000)
            var (facts, owners) = try await KeepRollupsTests.stocked(queue, now: clock.now)
            let settings = SampleBusiness.settings
            let context = UseCaseContext.testing(queue, clock: clock.wall)
            let keeper = KeepRollups(context: context, settings: settings, holdersPerPage: 7)
            let read = ReadChart(context: context, settings: settings)

            // Before the rollups are built: every contribution at once, and no page to go on from.
            let input = ReadChart.Input(chart: .revenue, from: SampleBusiness.origin, to: clock.now, resolution: .month)
            let whole = try await read.drill(input, period: "2026-02-01", measure: "gross", page: .init(limit: 1))
            #expect(!whole.fromRollups && whole.next == nil && whole.drill.contributions.count > 1)
            await #expect(throws: ReceiptError.self) {
                try await read.drill(
                    input, period: "2026-02-01", measure: "gross",
                    page: .init(after: DrillCursor(day: 20_485, appUserID: "u1")))
            }

            try await keeper.catchUp()
            try await Self.expectEngine(read, facts, owners, queue, at: clock.now, "built")

            // A refund, a renewal and a purchase moving to another holder.
            clock.advance(by: 20 * day)
            let moved = KeepRollupsTests.change(&facts, &owners, at: clock.now)
            let to = owners[moved]!
            try await KeepRollupsTests.save(facts, owners, only: [moved, "o3"], into: queue, now: clock.now)
            try await keeper.catchUp()
            try await Self.expectEngine(read, facts, owners, queue, at: clock.now, "after changes")

            // Erased: the holder's marks go with their other rows.
            let marks = { (user: String) in
                try await queue.read { db in
                    let q = try db.cached("SELECT count(*) FROM rollup_marks WHERE app_user_id = ?").bind([user])
                    defer { q.reset() }
                    return try q.step() ? q.int(0) : -1
                }
            }
            #expect(try await marks(to) > 0)
            _ = try await EraseSubscriber(context: context)(to, by: "test")
            let (left, kept) = (try await marks(to), try await marks(owners["o3"]!))
            #expect(left == 0 && kept > 0)
        }
    }

    /// Every figure of every chart by month (and revenue and churn by day, in the last 40 days),
    /// paged three contributions at a time, against the engine's drill-down over the facts.
    static func expectEngine(
        _ read: ReadChart, _ facts: VerifiedFacts, _ owners: [String: String], _ queue: DatabaseQueue, at now: Int64,
        _ context: String
    ) async throws {
        let stored = try await queue.read { db in try AnalyticsStore(db).rates() }
        let customers = try await queue.read { db in try SampleBusiness.storedCustomers(in: db) }
        let engine = ChartEngine(
            ledger: SampleBusiness.ledger(facts, owners: owners, customers: customers),
            rates: ExchangeRates(ReadChart.rows(stored)),
            settings: SampleBusiness.settings)
        var pages = 0
        for chart in Chart.allCases {
            for resolution in [Resolution.month, .day] where resolution == .month || [.revenue, .churn].contains(chart) {
                let from = resolution == .month ? SampleBusiness.origin - 2 * day : now - 40 * day
                let q = ChartQuery(chart: chart, from: from, to: now + 10 * day, resolution: resolution, now: now)
                let answer = try await onTheHeavyLane { try engine.answer(q) }
                var measures = chart.measures.filter { chart.parts(of: $0) == nil }
                if chart.hasCohortTable { measures += ["paying_0", "paying_2"] }
                for period in answer.periods where period.start <= now {
                    for measure in measures {
                        let label = period.label
                        let expected = try await onTheHeavyLane { try engine.drill(q, period: label, measure: measure) }
                        var found: [Contribution] = []
                        var cursor: DrillCursor?
                        repeat {
                            let page = try await read.drill(
                                .init(chart: chart, from: from, to: now + 10 * day, resolution: resolution),
                                period: period.label, measure: measure, page: .init(after: cursor, limit: 3))
                            #expect(page.fromRollups)
                            #expect(
                                page.drill.value == (cursor == nil ? expected.value : nil),
                                "\(context): \(chart) \(measure) of \(period.label)")
                            found += page.drill.contributions
                            // Round trips as clients see it.
                            cursor = page.next.flatMap { DrillCursor(text: $0.text) }
                            pages += 1
                        } while cursor != nil
                        func key(_ c: Contribution) -> String { "\(c.appUserID) \(c.transactionID ?? "") \(c.value)" }
                        #expect(
                            found.map(key).sorted() == expected.contributions.map(key).sorted(),
                            "\(context): \(chart) \(measure) of \(period.label) by \(resolution)")
                    }
                }
            }
        }
        #expect(pages > 200)
        // Into each country's and product's figure: only the marked holders of the group are read.
        var groups = 0
        for (chart, measure) in [(Chart.mrr, "mrr"), (.revenue, "gross"), (.newCustomers, "new_customers")] {
            for dimension in [ChartDimension.country, .product] {
                let from = SampleBusiness.origin - 2 * day
                let whole = ChartQuery(
                    chart: chart, from: from, to: now + 10 * day, resolution: .month, now: now, groupBy: dimension)
                let answer = try await onTheHeavyLane { try engine.answer(whole) }
                for group in answer.groups.map(\.value) {
                    var q = whole
                    q.group = group
                    for period in answer.periods where period.start <= now {
                        let (label, one) = (period.label, q)
                        let expected = try await onTheHeavyLane { try engine.drill(one, period: label, measure: measure) }
                        var found: [Contribution] = []
                        var cursor: DrillCursor?
                        repeat {
                            let page = try await read.drill(
                                .init(
                                    chart: chart, from: from, to: now + 10 * day, resolution: .month, groupBy: dimension,
                                    group: group),
                                period: label, measure: measure, page: .init(after: cursor, limit: 3))
                            #expect(page.drill.value == (cursor == nil ? expected.value : nil), "\(chart) in \(group)")
                            found += page.drill.contributions
                            cursor = page.next
                        } while cursor != nil
                        func key(_ c: Contribution) -> String { "\(c.appUserID) \(c.transactionID ?? "") \(c.value)" }
                        #expect(
                            found.map(key).sorted() == expected.contributions.map(key).sorted(),
                            "\(context): \(chart) \(measure) of \(label) in \(group)")
                        groups += expected.contributions.isEmpty ? 0 : 1
                    }
                }
            }
        }
        #expect(groups > 20)
    }

    @Test func cursorsReadBackAndNothingElseDoes() {
        for cursor in [DrillCursor(day: 20_485, appUserID: "u1"), .init(day: -3, appUserID: "a:b/c+d é")] {
            #expect(DrillCursor(text: cursor.text) == cursor)
            #expect(!cursor.text.contains("=") && !cursor.text.contains("+") && !cursor.text.contains("/"))
        }
        for text in ["", "not base64!", "MjA0ODU", "OnUx", "eDp1MQ", String(repeating: "A", count: 500)] {
            #expect(DrillCursor(text: text) == nil, "\(text)")
        }
    }
}
