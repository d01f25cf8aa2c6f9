import Analytics
import Clocks
import DatabaseEngine
import Entitlements
import Foundation
import Logging
import MetricsTestKit
import ReceiptTesting
import Storage
import Testing

@testable import Charts

private let day: Int64 = 86_400_000

/// The rollups through storage, on each dialect: built from the sample business, kept as facts
/// change (a refund, a renewal, a purchase moving to another holder), rebuilt when the rates
/// change; at every step ReadChart answers from them exactly what the engine answers from the
/// facts, on days after the rollups were written and at instants when figures change.
@Suite("Rollups through storage")
struct KeepRollupsTests {
    static let settings = SampleBusiness.settings

    @Test(arguments: await testDialects())
    func rollupsFollowTheFacts(dialect: Database.Dialect) async throws {
        try await withScratchDirectory("rollups") { dir in
            let queue = try await migratedQueue(dialect, in: dir)
            let clock = TestClock(SampleBusiness.origin + 150 * day + 3_600_000)
            var (facts, owners) = try await Self.stocked(queue, now: clock.now)
            let metrics = TestMetrics()
            let keeper = KeepRollups(
                context: .testing(queue, clock: clock.wall, metrics: metrics), settings: Self.settings, holdersPerPage: 7,
                changesPerStep: 5)
            let read = ReadChart(context: .testing(queue, clock: clock.wall), settings: Self.settings)

            // Before a build, charts read the ledger.
            let before = try await read(.init(chart: .revenue, from: SampleBusiness.origin, to: clock.now))
            #expect(!before.fromRollups)
            let built = try await keeper.catchUp()
            #expect(built.holders == 30)
            // Thirty holders in pages of seven (and an empty last one that ends the rebuild), then the
            // changes written meanwhile; each step read, computed and written once.
            let pages = try metrics.expectCounter("rollup_keeper_holders_total", [("kind", "rebuilt")]).values
            #expect(pages == [7, 7, 7, 7, 2, 0])
            let changed = try metrics.expectCounter("rollup_keeper_holders_total", [("kind", "changed")]).values
            #expect(!changed.isEmpty)
            for phase in ["read", "compute", "write"] {
                let timed = try metrics.expectTimer("rollup_keeper_step_duration_seconds", [("phase", phase)]).values.count
                #expect(timed == pages.count + changed.count)
            }
            try await Self.expectEngine(read, facts, owners, queue, at: clock.now, "built")

            // A day later, at the instant a subscription lapses, and a millisecond after it.
            let ledger = SampleBusiness.ledger(facts, owners: owners)
            let engine = ChartEngine(ledger: ledger, rates: ExchangeRates(), settings: Self.settings)
            let ends = engine.items(ChartQuery(chart: .actives, from: 0, to: 1, now: 0)).map(\.until).filter {
                $0 > clock.now + day
            }.sorted()
            for instant in [ends[0], ends[0] + 1, ends[ends.count / 2] - 1] {
                clock.advance(by: instant - clock.now)
                try await Self.expectEngine(read, facts, owners, queue, at: clock.now, "at \(instant)")
            }

            // A refund, a renewal and a purchase moving to another holder, applied from the change log.
            let moved = Self.change(&facts, &owners, at: clock.now)
            try await Self.save(facts, owners, only: [moved, "o3"], into: queue, now: clock.now)
            let applied = try await keeper.catchUp()
            #expect(applied.holders == 0 && applied.changes >= 3)
            try await Self.expectEngine(read, facts, owners, queue, at: clock.now, "after changes")
            #expect(try await keeper.step() == .idle)

            // New rates: every converted figure moves, so the rollups are rebuilt.
            var rates = SampleBusiness.rates
            rates[0].perEuro = "1.5"
            let csv = Self.csv(rates)
            _ = try await queue.write { db in try ImportRates.run(csv: csv, into: db) }
            let stale = try await read(.init(chart: .revenue, from: SampleBusiness.origin, to: clock.now))
            #expect(!stale.fromRollups)
            let rebuilt = try await keeper.catchUp()
            // Everyone stored, whether or not they hold a purchase now (a new customer is a customer).
            #expect(rebuilt.holders == 30 && Set(owners.values).count == 29, "\(rebuilt)")
            try await Self.expectEngine(read, facts, owners, queue, at: clock.now, "new rates")
        }
    }

    /// Every chart by day and month, and by day for one app; split by country and by product too:
    /// from ReadChart (from the rollups) against the engine over the facts and the stored rates.
    static func expectEngine(
        _ read: ReadChart, _ facts: VerifiedFacts, _ owners: [String: String], _ queue: DatabaseQueue, at now: Int64,
        _ context: String
    ) async throws {
        let stored = try await queue.read { db in try AnalyticsStore(db).rates() }
        let customers = try await queue.read { db in try SampleBusiness.storedCustomers(in: db) }
        let engine = ChartEngine(
            ledger: SampleBusiness.ledger(facts, owners: owners, customers: customers),
            rates: ExchangeRates(ReadChart.rows(stored)),
            settings: settings)
        let cases: [(Resolution, String?, ChartDimension?)] = [
            (.day, nil, nil), (.month, nil, nil), (.day, "com.y", nil), (.month, nil, .country), (.day, "com.y", .product),
        ]
        for chart in Chart.allCases {
            for (resolution, app, groupBy) in cases
            where !chart.isCohorted || app == nil {
                let from = SampleBusiness.origin - 2 * day
                let filters = ChartFilters(app: app)
                let answer = try await read(
                    .init(
                        chart: chart, from: from, to: now + 40 * day, resolution: resolution, filters: filters, groupBy: groupBy))
                let q = ChartQuery(
                    chart: chart, from: from, to: now + 40 * day, resolution: resolution, filters: filters, now: now,
                    groupBy: groupBy)
                let expected = try await onTheHeavyLane { try engine.answer(q) }
                #expect(answer.fromRollups, "\(context): \(chart)")
                // Each answer's rows by name made once (`values` builds them all).
                let (got, want) = (answer.values, expected.values)
                let differing = got.indices.filter { got[$0] != want[$0] }
                #expect(
                    differing.isEmpty,
                    """
                    \(context): \(chart) by \(resolution) \(app ?? ""): \(differing.count) periods differ, first \
                    \(differing.first.map { "\(answer.periods[$0].label): \(got[$0]) ≠ \(want[$0])" } ?? "")
                    """)
                #expect(answer.missingRates == expected.missingRates && answer.missingPrices == expected.missingPrices)
                #expect(answer.untaxedStorefronts == expected.untaxedStorefronts, "\(context): \(chart)")
                #expect(
                    answer.groups.map(\.value) == expected.groups.map(\.value),
                    "\(context): \(chart) by \(String(describing: groupBy))")
                #expect(answer.groups.map(\.figures) == expected.groups.map(\.figures), "\(context): \(chart) groups")
                // Every split chart has groups to compare (the sample business sells nothing one-time).
                if groupBy != nil, chart != .nonSubscriptionPurchases {
                    #expect(answer.groups.count > 1, "\(context): \(chart) by \(resolution) \(app ?? "") has groups")
                }
            }
        }
    }

    /// The sample business (seed 41) saved for its owners and the sample rates imported: what the
    /// rollup suites start from.
    static func stocked(_ queue: DatabaseQueue, now: Int64) async throws -> (VerifiedFacts, [String: String]) {
        let (facts, owners) = SampleBusiness.business(seed: 41)
        try await save(facts, owners, into: queue, now: now)
        _ = try await queue.write { db in try ImportRates.run(csv: csv(SampleBusiness.rates), into: db) }
        return (facts, owners)
    }

    /// As of `now`: a lapsed purchase refunded and moved to another holder, and subscription o3
    /// renewed. The moved purchase's original transaction id (save it and o3's again).
    static func change(_ facts: inout VerifiedFacts, _ owners: inout [String: String], at now: Int64) -> String {
        let refunded = facts.purchases.firstIndex { $0.fact.cancellationDate == nil && $0.fact.expiresDate! < now }!
        facts.purchases[refunded].fact.cancellationDate = now - day
        facts.purchases[refunded].fact.commerce.revocationType = "REFUND_FULL"
        facts.purchases[refunded].rawJSON = #"{"refunded":true}"#  // the store rewrites what its source changed
        var renewal = facts.purchases.last { $0.fact.originalTransactionID == "o3" }!
        renewal.fact.transactionID += "-renewed"
        renewal.fact.purchaseDate = now - 1000
        renewal.fact.expiresDate = now + 30 * day
        facts.purchases.append(renewal)
        let moved = facts.purchases[refunded].fact.originalTransactionID
        owners[moved] = owners[moved] == "u0" ? "u1" : "u0"
        facts.statedAt = now
        return moved
    }

    /// Saves each subscription's facts for its owner (only those of `only` when given).
    static func save(
        _ facts: VerifiedFacts, _ owners: [String: String], only: Set<String>? = nil, into queue: DatabaseQueue, now: Int64
    ) async throws {
        try await queue.write { db in
            let store = ReceiptStore(db)
            for (original, user) in owners.sorted(by: { $0.key < $1.key }) where only?.contains(original) ?? true {
                var mine = facts
                mine.purchases = facts.purchases.filter { $0.fact.originalTransactionID == original }
                mine.renewals = facts.renewals.filter { $0.fact.originalTransactionID == original }
                _ = try store.save(mine, for: user, now: now)
            }
            try SampleBusiness.storeRefundRequests(facts, only: only, in: db)
        }
    }

    /// Rates as the ECB publishes them: a header of currencies, a line per day.
    static func csv(_ rows: [AnalyticsStore.RateRow]) -> String {
        let currencies = Array(Set(rows.map(\.currency))).sorted()
        var byDay: [String: [String: String]] = [:]
        for r in rows { byDay[r.day, default: [:]][r.currency] = r.perEuro }
        var text = "Date, " + currencies.joined(separator: ", ") + ",\n"
        for (d, rates) in byDay.sorted(by: { $0.key > $1.key }) {
            text += d + ", " + currencies.map { rates[$0] ?? "N/A" }.joined(separator: ", ") + ",\n"
        }
        return text
    }
}

extension KeepRollupsTests {
    /// How far a step's changes surely include every change: on SQLite the last read; on
    /// PostgreSQL up to a gap, unless what follows the gap was written before the commit window.
    @Test func aGapInTheChangesIsReadAgainUntilItFillsOrIsOld() {
        func change(_ sequence: Int64, at: Int64) -> ChangeLog.Change { .init(sequence: sequence, appUserID: "u", at: at) }
        let read = [change(11, at: 100), change(12, at: 100), change(14, at: 200), change(16, at: 100)]
        #expect(KeepRollups.through(10, read, contiguous: true, before: 0) == 16)
        #expect(KeepRollups.through(10, read, contiguous: false, before: 0) == 12)
        #expect(KeepRollups.through(10, read, contiguous: false, before: 150) == 12)
        #expect(KeepRollups.through(10, read, contiguous: false, before: 250) == 16)
        #expect(KeepRollups.through(10, [], contiguous: false, before: 300) == 10)
        #expect(KeepRollups.through(10, [change(13, at: 100)], contiguous: false, before: 50) == 10)
    }

    /// Two instances' keepers on one PostgreSQL database: the first to ask keeps the rollups,
    /// the other does not compute them too; on SQLite, served by one process, the keeper leads.
    @Test(arguments: await testDialects())
    func oneInstancesKeeperKeepsTheRollups(dialect: Database.Dialect) async throws {
        let clock = TestClock(SampleBusiness.origin)
        let keeper = { (queue: DatabaseQueue) in
            KeepRollups(context: .testing(queue, clock: clock.wall), settings: Self.settings)
        }
        guard dialect == .postgresql else {
            try await withScratchDirectory("rollups-lead") { dir in
                let queue = try await migratedQueue(dialect, in: dir)
                let leads = try await keeper(queue).leads()
                #expect(leads)
            }
            return
        }
        let url = try await PostgresTestServer.freshDatabase(migrated: true)
        let (first, second) = (try DatabaseQueue(postgresURL: url), try DatabaseQueue(postgresURL: url))
        #expect(try await keeper(first).leads())
        #expect(try await keeper(second).leads() == false)
        #expect(try await keeper(first).leads())
    }

    /// An erasure names everyone: one rebuild follows, which starts past the erasure's change. It
    /// once started again from before it while the change was within the commit window (ten
    /// seconds; for ever on a clock that stands still), rebuilding over and over.
    @Test(arguments: await testDialects())
    func anErasureStartsOneRebuild(dialect: Database.Dialect) async throws {
        try await withScratchDirectory("rollups-erasure") { dir in
            let queue = try await migratedQueue(dialect, in: dir)
            let clock = TestClock(SampleBusiness.origin + 150 * day)
            _ = try await Self.stocked(queue, now: clock.now)
            let keeper = KeepRollups(context: .testing(queue, clock: clock.wall), settings: Self.settings, holdersPerPage: 10)
            try await keeper.catchUp()
            try await queue.write { db in try ChangeLog(db).append(ChangeLog.everyone, at: clock.now) }
            var steps: [KeepRollups.Step] = []
            while steps.count < 20, steps.last != .idle { steps.append(try await keeper.step()) }
            #expect(steps.filter { $0 == .startedRebuild }.count == 1, "\(steps)")
            #expect(steps.last == .idle, "\(steps)")
        }
    }

    /// A rebuild computed on three threads keeps exactly what one thread keeps: every table of the
    /// rollups, row for row.
    @Test(arguments: await testDialects())
    func aRebuildOnThreeThreadsKeepsWhatOneKeeps(dialect: Database.Dialect) async throws {
        func built(threads: Int, in dir: String) async throws -> [String: [String]] {
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            let queue = try await migratedQueue(dialect, in: dir)
            let clock = TestClock(SampleBusiness.origin + 150 * day)
            _ = try await Self.stocked(queue, now: clock.now)
            let keeper = KeepRollups(context: .testing(queue, clock: clock.wall), settings: Self.settings, holdersPerPage: 13)
            try await keeper.computing(on: threads).catchUp()
            return try await queue.read { db in
                var tables: [String: [String]] = [:]
                for table in ["rollup_holders", "rollup_days", "rollup_splits", "rollup_moments", "rollup_marks"] {
                    let q = try db.prepare("SELECT * FROM \(table)")
                    var rows: [String] = []
                    while try q.step() {
                        // A holder's kept rows and moments are sets: their order in the text is the sums'.
                        rows.append(
                            (0..<q.columnCount).map { column in
                                let text = q.text(column) ?? "null"
                                if table == "rollup_holders", column == 1 {
                                    return "\(RollupStore.rows(ofKept: text)?.sorted { $0.key < $1.key } ?? [])"
                                }
                                if table == "rollup_moments", column == 4 {
                                    return "\(RollupMoment.decode(text, appUserID: "")?.map { "\($0)" }.sorted() ?? [])"
                                }
                                return text
                            }.joined(separator: "|"))
                    }
                    tables[table] = rows.sorted()
                }
                return tables
            }
        }
        try await withScratchDirectory("rollups-threads") { dir in
            let one = try await built(threads: 1, in: dir + "/one")
            let three = try await built(threads: 3, in: dir + "/three")
            #expect(one.values.allSatisfy { !$0.isEmpty })
            for (table, rows) in one { #expect(three[table] == rows, "\(table)") }
        }
    }
}
