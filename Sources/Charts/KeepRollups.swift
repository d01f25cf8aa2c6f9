package import Analytics
import Clocks
import CoreMetrics
import DatabaseEngine
import Entitlements
import Identifiers
import Logging
package import ReceiptCore
import ServiceLifecycle
import Storage
import Workers

/// Keeps the chart rollups current (Docs/analytics.md#rollups), off the request path: follows the
/// change log and recomputes each changed holder's rows, adding to the sums the difference from
/// what they added before; rebuilds everything, a page of holders at a time, when the settings,
/// the loaded rates or the rollup format change, or a change names everyone (an erasure).
///
/// Each step is one transaction holding a lock every instance's keeper takes, so several
/// instances on one PostgreSQL database share the work and never both apply one holder's change.
package struct KeepRollups: UseCase, Sendable {
    package let context: UseCaseContext
    let settings: AnalyticsSettings
    /// Between catch-ups while there is nothing to do.
    let intervalMs: Int64
    let holdersPerPage: Int
    let changesPerStep: Int
    /// The threads a rebuild's page of holders is computed on: one in a serving instance (its
    /// keeper yields to requests), every core in `receiptd build-rollups` (``computing(on:)``).
    private(set) var threads = 1
    private let parsedRates = ParsedRates()

    package init(
        context: UseCaseContext, settings: AnalyticsSettings, intervalMs: Int64 = 1_000, holdersPerPage: Int = 1_000,
        changesPerStep: Int = 5_000
    ) {
        self.context = context
        self.settings = settings
        self.intervalMs = intervalMs
        self.holdersPerPage = holdersPerPage
        self.changesPerStep = changesPerStep
    }

    /// The same keeper, computing a rebuild's pages on `threads` threads.
    package func computing(on threads: Int) -> KeepRollups {
        var keeper = self
        keeper.threads = max(1, threads)
        return keeper
    }

    /// A change on PostgreSQL numbered below one already read may still be committing for this
    /// long; after it, a gap in the numbers is a write that rolled back.
    static let commitWindowMs: Int64 = 10_000

    /// What a step did.
    package enum Step: Equatable, Sendable {
        /// Started a rebuild: the settings, rates or format differ from what the rollups hold.
        case startedRebuild
        /// Rebuilt a page of holders; `done` when it was the last.
        case rebuilt(holders: Int, done: Bool)
        /// Applied changes to `holders` holders.
        case applied(changes: Int, holders: Int)
        /// Nothing to do.
        case idle
    }

    /// The settings, rates and format the rollups are built for.
    static func fingerprint(_ settings: AnalyticsSettings, ratesRevision: Int64) -> String {
        let tax = settings.taxRates.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
        let prices = settings.priceTable.sorted { $0.key < $1.key }.flatMap { (product, byStorefront) in
            byStorefront.sorted { $0.key < $1.key }.map { "\(product)/\($0.key)=\($0.value.milliunits) \($0.value.currency)" }
        }
        return [
            "format \(Rollup.format)", "rates \(ratesRevision)", "currency \(settings.reportingCurrency)",
            "small business \(settings.smallBusinessApps.sorted().map(\.string))", "tax \(tax)", "prices \(prices)",
        ].joined(separator: "; ") + simulated(settings.simulatedRates)
    }

    /// The simulated rates' part of the fingerprint: none without them, so that rollups built
    /// before there were any stay as built.
    private static func simulated(_ rates: [String: Int64]) -> String {
        rates.isEmpty ? "" : "; simulated rates \(rates.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" })"
    }

    /// The rollups' state when they are built and built for these settings and the loaded rates:
    /// what a chart or a drill-down may read them by. Nil while they are (to be) rebuilt.
    static func ready(_ db: Database, for settings: AnalyticsSettings) throws -> RollupStore.State? {
        let state = try RollupStore(db).state()
        let revision = try AnalyticsStore(db).ratesRevision()
        guard state.phase == .ready, state.fingerprint == fingerprint(settings, ratesRevision: revision) else {
            return nil
        }
        return state
    }

    /// Steps until there is nothing to do: what a test or `receiptd build-rollups` waits for.
    @discardableResult
    package func catchUp() async throws(ReceiptError) -> (holders: Int, changes: Int) {
        var (holders, changes) = (0, 0)
        while true {
            switch try await step() {
            case .idle: return (holders, changes)
            case .startedRebuild: continue
            case .rebuilt(let n, _): holders += n
            case .applied(let c, _): changes += c
            }
        }
    }

    /// Every `intervalMs`, applies the changes written meanwhile (back to back while a step takes
    /// a full `changesPerStep`, or while rebuilding), until the service group shuts down. Waiting
    /// between steps lets each take a second's changes at once: a POST writes two changes (its
    /// facts, then its derived state) and a busy second many, and each holder is recomputed once
    /// per step however many of its changes it holds. A failed step is logged and tried again
    /// next time; charts meanwhile read the rollups as they stand, or the transactions.
    ///
    /// On PostgreSQL one instance's keeper keeps them while it runs (``leads()``); the others'
    /// wait for it to stop, so that no two compute the same holders (each step's write would
    /// keep the first and drop the rest).
    package func run() async {
        await Periodic(everyMs: intervalMs, monotonic: monotonic).run { [self] in
            var rebuilt = 0
            do {
                guard try await leads() else { return }
                steps: while !Task.isCancelled {
                    switch try await step() {
                    case .idle: break steps
                    case .startedRebuild: continue
                    case .rebuilt(let holders, let done):
                        rebuilt += holders
                        if done { logger.info("chart rollups rebuilt", metadata: ["holders": "\(rebuilt)"]) }
                    case .applied(let changes, _): if changes < changesPerStep { break steps }
                    }
                }
            } catch {
                logger.error("the chart rollups could not be kept", metadata: ["error": "\(error)"])
            }
        }
    }

    /// Whether this instance's keeper keeps the rollups now: on PostgreSQL, the one whose
    /// background connection holds the keepers' lead (``Database/lead(_:)``), taken by the first
    /// to ask and held until its process stops; on SQLite, always.
    package func leads() async throws -> Bool {
        try await database.read(background: true) { db in try db.lead(Self.leadKey) }
    }

    /// The keepers' lead's name.
    static let leadKey = "rollup keeper"

    /// What a step read and computed, to write.
    private enum Plan: Sendable {
        case idle
        /// The rollups are not built for these settings, rates and format: start over.
        case restart(RollupStore.State, fingerprint: String, followFrom: Int64)
        /// A page of a rebuild: its holders' update, and where the next page starts (nil: done).
        case page(RollupStore.State, Update, holders: Int, last: String?)
        /// Changes applied to each changed holder.
        case changes(RollupStore.State, Update, changes: [ChangeLog.Change], holders: Int)
        /// A change naming everyone (an erasure): start over, from after the changes up to it.
        case everyone(RollupStore.State, changes: [ChangeLog.Change])
    }

    /// One step: what to do is read and the rows computed on the database's background reader (a
    /// thread of lower CPU priority, so that under a burst of requests they are served first and
    /// the keeper catches up after), and the result written in one short write transaction, which
    /// first checks under the lock that no keeper moved the rollups since the read (else it does
    /// nothing: the next step reads again). Writers of facts are never held up by the computing.
    package func step() async throws(ReceiptError) -> Step {
        let now = clock.now()
        let today = CivilTime.split(now).0
        let (settings, holdersPerPage, changesPerStep, parsedRates, threads) = (
            settings, holdersPerPage, changesPerStep, parsedRates, threads
        )
        let metrics = metrics
        /// Records `phase`'s time (read, compute or write) since `started`; returns now.
        @Sendable func lap(_ phase: String, since started: ContinuousClock.Instant) -> ContinuousClock.Instant {
            let now = ContinuousClock.now
            let (seconds, attoseconds) = (now - started).components
            Timer(label: "rollup_keeper_step_duration_seconds", dimensions: [("phase", phase)], factory: metrics)
                .recordNanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
            return now
        }
        func holders(_ n: Int, _ kind: String) {
            Counter(label: "rollup_keeper_holders_total", dimensions: [("kind", kind)], factory: metrics).increment(by: n)
        }
        do {
            let plan = try await database.read(background: true) { db -> Plan in
                let started = ContinuousClock.now
                /// The holders' update, with the time read since `started` and the time computing it.
                func computed(_ ledgers: [Identifier: Ledger], kept: [Identifier: String], rates: ExchangeRates, threads: Int = 1)
                    throws -> Update
                {
                    let read = lap("read", since: started)
                    defer { _ = lap("compute", since: read) }
                    return try Self.update(
                        ledgers, kept: kept, settings: settings, rates: rates, writtenAt: now, threads: threads)
                }
                let store = RollupStore(db)
                let state = try store.state()
                let revision = try AnalyticsStore(db).ratesRevision()
                let fingerprint = Self.fingerprint(settings, ratesRevision: revision)
                if state.fingerprint != fingerprint {
                    // Every change up to the rollups' last is committed, so a rebuild reads it.
                    let from = max(try ChangeLog(db).followFrom(since: now - Self.commitWindowMs), state.changesThrough)
                    return .restart(state, fingerprint: fingerprint, followFrom: from)
                }
                let rates = try parsedRates.rates(revision: revision) { try Self.rates(db, simulated: settings.simulatedRates) }
                if state.phase == .building {
                    let page = try AnalyticsStore(db).holders(environment: nil, after: state.rebuildAfter, limit: holdersPerPage)
                    let ledgers = ReadChart.ledgers(page.holdings)
                    let update = try computed(ledgers, kept: [:], rates: rates, threads: threads)
                    return .page(state, update, holders: ledgers.count, last: page.last)
                }
                let changes = try ChangeLog(db).since(state.changesThrough, limit: changesPerStep)
                guard !changes.isEmpty else { return .idle }
                if let everyone = changes.firstIndex(where: { $0.appUserID == ChangeLog.everyone }) {
                    return .everyone(state, changes: Array(changes[...everyone]))
                }
                let users = Set(changes.map { Identifier($0.appUserID) }).sorted().map(\.string)
                let held = try AnalyticsStore(db).holdings(of: users)
                var ledgers = ReadChart.ledgers(held)
                for user in users where ledgers[Identifier(user)] == nil { ledgers[Identifier(user)] = Ledger(entries: []) }
                let update = try computed(ledgers, kept: try store.holderRows(users), rates: rates)
                return .changes(state, update, changes: changes, holders: ledgers.count)
            }
            switch plan {
            case .idle:
                return .idle
            case .restart(let state, let fingerprint, let from):
                try await write(unless: state) { store in
                    try store.clear()
                    try store.save(.init(fingerprint: fingerprint, phase: .building, rebuildAfter: nil, changesThrough: from))
                }
                return .startedRebuild
            case .everyone(let state, let changes):
                var after = state
                after.fingerprint = ""  // an erasure may have taken anyone's purchases: rebuild
                // The rebuild reads everything after this change: it follows on from past it
                // (else, within the commit window, it would read the change again and restart).
                after.changesThrough = Self.through(
                    state.changesThrough, changes, contiguous: database.dialect == .sqlite, before: now - Self.commitWindowMs)
                try await write(unless: state) { [after] store in try store.save(after) }
                return .applied(changes: changes.count, holders: 0)
            case .page(let state, let update, let count, let last):
                let started = ContinuousClock.now
                var after = state
                after.rebuildAfter = last
                if last == nil { after.phase = .ready }
                try await write(unless: state) { [after] store in
                    try update.write(store, fresh: true)
                    try store.save(after)
                }
                _ = lap("write", since: started)
                holders(count, "rebuilt")
                return .rebuilt(holders: count, done: last == nil)
            case .changes(let state, let update, let changes, let count):
                let started = ContinuousClock.now
                var after = state
                // Changes after a gap still committing are read again next step: applying one twice is harmless.
                after.changesThrough = Self.through(
                    state.changesThrough, changes, contiguous: database.dialect == .sqlite, before: now - Self.commitWindowMs)
                try await write(unless: state) { [after] store in
                    try store.pruneMoments(before: today)
                    try update.write(store, fresh: false)
                    try store.save(after)
                }
                _ = lap("write", since: started)
                holders(count, "changed")
                return .applied(changes: changes.count, holders: count)
            }
        } catch {
            logger.error("the chart rollups could not be kept", metadata: ["error": "\(error)"])
            throw .internalFault
        }
    }

    /// Writes under the keepers' lock, unless the rollups' state is no longer `read` (another
    /// keeper moved them since: its work stands, and the next step starts from it). By the
    /// rollups' writer: on SQLite, that of their own file, so saves never wait for it.
    private func write(unless read: RollupStore.State, _ body: @escaping @Sendable (RollupStore) throws -> Void) async throws {
        try await database.write(attached: true) { db in
            try db.lock([RollupStore.lockKey])
            let store = RollupStore(db)
            guard try store.state() == read else { return }
            try body(store)
        }
    }

    /// How far the changes read are surely all the changes: on SQLite (one writer, numbers in
    /// commit order) the last read; on PostgreSQL up to the first gap in the numbers, unless what
    /// follows the gap was written before `before` (then the gap is a rollback).
    static func through(_ from: Int64, _ changes: [ChangeLog.Change], contiguous: Bool, before: Int64) -> Int64 {
        guard !contiguous else { return changes.last?.sequence ?? from }
        var through = from
        for change in changes {
            guard change.sequence == through + 1 || change.at < before else { break }
            through = change.sequence
        }
        return through
    }

    static func rates(_ db: Database, simulated: [String: Int64]) throws -> ExchangeRates {
        ExchangeRates(ReadChart.rows(try AnalyticsStore(db).rates()), simulated: simulated)
    }

    /// What recomputed holders change: the sums' differences, each holder's rows (encoded; nil
    /// to forget a holder who holds nothing), moments (as the rows that replace theirs), and the
    /// marks they gained and lost. All of it worked out before the write, which runs SQL alone
    /// (on SQLite, on the rollups file's writer, under the keepers' lock). Each list is in the
    /// order of the table it goes to (holders by their ids' bytes, marks by their key), so that
    /// the write goes through each table's pages in turn.
    struct Update: Sendable {
        var differences: [RollupRow] = []
        var rows: [(appUserID: String, rows: String?)] = []
        var moments: [RollupStore.MomentRow] = []
        var marked: [(appUserID: String, mark: RollupMark)] = []
        var unmarked: [(appUserID: String, mark: RollupMark)] = []

        /// Marks in the order of their table's key, those of one day in the order of the holders
        /// they were added in.
        mutating func sortMarks() {
            marked = Self.inKeyOrder(marked)
            unmarked = Self.inKeyOrder(unmarked)
        }

        /// Sorted as numbers: each mark's environment by its rank among the few there are (in
        /// byte order), its family, its day, and its place.
        private static func inKeyOrder(_ marks: [(appUserID: String, mark: RollupMark)]) -> [(
            appUserID: String, mark: RollupMark
        )] {
            var environments: [String] = []
            for (_, mark) in marks where !environments.contains(where: { $0.isExactly(mark.environment) }) {
                environments.append(mark.environment)
            }
            environments.sort { Identifier($0) < Identifier($1) }
            let families = RollupMark.Family.allCases.sorted { $0.rawValue < $1.rawValue }
            var order = marks.indices.map { i in
                let mark = marks[i].mark
                let environment = environments.firstIndex { $0.isExactly(mark.environment) }!
                return (environment * families.count + families.firstIndex(of: mark.family)!, mark.day, i)
            }
            order.sort { ($0.0, $0.1, $0.2) < ($1.0, $1.1, $1.2) }
            return order.map { marks[$0.2] }
        }

        func write(_ store: RollupStore, fresh: Bool) throws {
            try store.saveHolderRows(rows)
            try store.replaceMoments(of: rows.map(\.appUserID), with: moments, fresh: fresh)
            try store.add(differences)
            try store.removeMarks(unmarked)
            try store.addMarks(marked)
        }
    }

    /// Each holder's rows, moments and marks from their ledger now, and the sums' and marks'
    /// differences from the rows kept for them (`kept`, encoded; none for a holder not in it).
    static func update(
        _ ledgers: [Identifier: Ledger], kept: [Identifier: String], settings: AnalyticsSettings, rates: ExchangeRates,
        writtenAt: Int64
    ) throws -> Update {
        var update = Update()
        var moments: [(appUserID: String, moments: [RollupMoment])] = []
        var differences = RollupSums()
        for user in ledgers.keys.sorted() {
            let now = Rollup.holder(ledgers[user]!, settings: settings, rates: rates, writtenAt: writtenAt)
            var old = HolderRollup(kept: [])
            if let text = kept[user] {
                guard let rows = RollupStore.holder(ofKept: text) else {
                    throw KeepRollupsFailure("the rollup rows kept for a holder do not read back")
                }
                old = rows
            }
            differences.add(old.kept, oneGroup: old.oneGroup, sign: -1)
            differences.add(now.kept, oneGroup: now.oneGroup, sign: 1)
            let (before, after) = (RollupMark.marks(of: old.kept), RollupMark.marks(of: now.kept))
            update.marked += after.subtracting(before).sorted().map { (user.string, $0) }
            update.unmarked += before.subtracting(after).sorted().map { (user.string, $0) }
            update.rows.append((user.string, now.kept.isEmpty ? nil : RollupStore.kept(now.kept, oneGroup: now.oneGroup)))
            moments.append((user.string, now.moments))
        }
        update.moments = RollupStore.momentRows(moments)
        update.differences = differences.rows()
        update.sortMarks()
        return update
    }
}

extension KeepRollups: Service {}

struct KeepRollupsFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
