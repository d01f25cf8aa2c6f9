import Analytics
import Clocks
import Entitlements
import Logging
import ServiceLifecycle
import Storage

/// Keeps the chart rollups current (Docs/analytics.md#rollups), off the request path: follows the
/// change log and recomputes each changed holder's rows, adding to the sums the difference from
/// what they added before; rebuilds everything, a page of holders at a time, when the settings,
/// the loaded rates or the rollup format change, or a change names everyone (an erasure).
///
/// Each step is one transaction holding a lock every instance's keeper takes, so several
/// instances on one PostgreSQL database share the work and never both apply one holder's change.
package struct KeepRollups: Sendable {
    let database: DatabaseQueue
    let settings: AnalyticsSettings
    let logger: Logger
    let clock: WallClock
    let monotonic: any MonotonicClock
    /// Between catch-ups while there is nothing to do.
    let intervalMs: Int64
    let holdersPerPage: Int
    let changesPerStep: Int

    package init(
        database: DatabaseQueue, settings: AnalyticsSettings, logger: Logger, clock: WallClock,
        monotonic: any MonotonicClock = SystemMonotonicClock(), intervalMs: Int64 = 1_000, holdersPerPage: Int = 1_000,
        changesPerStep: Int = 1_000
    ) {
        self.database = database
        self.settings = settings
        self.logger = logger
        self.clock = clock
        self.monotonic = monotonic
        self.intervalMs = intervalMs
        self.holdersPerPage = holdersPerPage
        self.changesPerStep = changesPerStep
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
        let prices = settings.priceTable.sorted { $0.key < $1.key }.flatMap { product, byStorefront in
            byStorefront.sorted { $0.key < $1.key }.map { "\(product)/\($0.key)=\($0.value.milliunits) \($0.value.currency)" }
        }
        return [
            "format \(Rollup.format)", "rates \(ratesRevision)", "currency \(settings.reportingCurrency)",
            "small business \(settings.smallBusinessApps.sorted())", "tax \(tax)", "prices \(prices)",
        ].joined(separator: "; ")
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

    /// Catches up, then again every `intervalMs`, until the service group shuts down. A failed
    /// step is logged and tried again next time; charts meanwhile read the ledger or the rollups
    /// as they stand.
    package func run() async {
        await cancelWhenGracefulShutdown { [self] in
            while !Task.isCancelled {
                do {
                    let (holders, changes) = try await catchUp()
                    if holders > 0 { logger.info("chart rollups rebuilt", metadata: ["holders": "\(holders)"]) }
                    if changes > 0 { logger.debug("chart rollups caught up", metadata: ["changes": "\(changes)"]) }
                } catch {
                    logger.error("the chart rollups could not be kept", metadata: ["error": "\(error)"])
                }
                await monotonic.sleep(for: .milliseconds(intervalMs))
            }
        }
    }

    /// One transaction's worth of work.
    package func step() async throws(ReceiptError) -> Step {
        let now = clock.now()
        let (settings, holdersPerPage, changesPerStep) = (settings, holdersPerPage, changesPerStep)
        do {
            return try await database.write { db in
                try db.lock(["receiptd rollups"])
                let store = RollupStore(db)
                var state = try store.state()
                let fingerprint = Self.fingerprint(settings, ratesRevision: state.ratesRevision)
                if state.fingerprint != fingerprint {
                    try store.clear()
                    state = .init(
                        fingerprint: fingerprint, phase: .building, rebuildAfter: nil,
                        changesThrough: try ChangeLog(db).followFrom(since: now - Self.commitWindowMs),
                        ratesRevision: state.ratesRevision)
                    try store.save(state)
                    return .startedRebuild
                }
                let keeper = Keeper(db: db, settings: settings, rates: try Self.rates(db), today: CivilTime.split(now).0)
                if state.phase == .building {
                    let page = try AnalyticsStore(db).everyHolder(after: state.rebuildAfter, limit: holdersPerPage)
                    let holders = try keeper.recompute(Self.ledgers(page.purchases, page.renewals), fresh: true)
                    state.rebuildAfter = page.last
                    if page.last == nil { state.phase = .ready }
                    try store.save(state)
                    return .rebuilt(holders: holders, done: page.last == nil)
                }
                try store.pruneMoments(before: CivilTime.split(now).0)
                let changes = try ChangeLog(db).since(state.changesThrough, limit: changesPerStep)
                guard !changes.isEmpty else { return .idle }
                if changes.contains(where: { $0.appUserID == ChangeLog.everyone }) {
                    state.fingerprint = ""  // an erasure may have taken anyone's purchases: rebuild
                    try store.save(state)
                    return .applied(changes: changes.count, holders: 0)
                }
                let users = Array(Set(changes.map(\.appUserID))).sorted()
                var ledgers: [String: Ledger] = [:]
                for user in users {
                    let held = try AnalyticsStore(db).holdings(of: user)
                    ledgers[user] = Self.ledgers(held.purchases, held.renewals)[user] ?? Ledger(entries: [])
                }
                let holders = try keeper.recompute(ledgers, fresh: false)
                let through = Self.through(
                    state.changesThrough, changes, contiguous: db.dialect == .sqlite, before: now - Self.commitWindowMs)
                // Changes after a gap still committing are read again next step: applying one twice is harmless.
                state.changesThrough = through
                try store.save(state)
                return .applied(changes: changes.count, holders: holders)
            }
        } catch {
            logger.error("the chart rollups could not be kept", metadata: ["error": "\(error)"])
            throw .internalFault
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

    /// Each holder's ledger from rows read together.
    static func ledgers(_ purchases: [AnalyticsStore.HeldPurchase], _ renewals: [AnalyticsStore.RenewalRow]) -> [String: Ledger] {
        var byHolder: [String: Ledger] = [:]
        var holderOf: [String: String] = [:]
        for held in purchases {
            byHolder[held.appUserID, default: Ledger(entries: [])].entries.append(
                Ledger.Entry(appUserID: held.appUserID, bundleID: held.bundleID, purchase: held.purchase))
            holderOf[held.purchase.originalTransactionID] = held.appUserID
        }
        for r in renewals {
            guard let holder = holderOf[r.originalTransactionID] else { continue }
            byHolder[holder]?.renewals[r.originalTransactionID] = Ledger.RenewalState(
                autoRenewStatus: r.autoRenewStatus, isInBillingRetryPeriod: r.isInBillingRetryPeriod,
                gracePeriodExpiresDate: r.gracePeriodExpiresDate)
        }
        return byHolder
    }

    static func rates(_ db: Database) throws -> ExchangeRates {
        ExchangeRates(ReadChart.rows(try AnalyticsStore(db).rates()))
    }

    /// Recomputes holders within one transaction.
    struct Keeper {
        let db: Database
        let settings: AnalyticsSettings
        let rates: ExchangeRates
        let today: Int64

        /// Each holder's rows and moments from their ledger now; the sums move by the difference
        /// from their rows as kept (none when `fresh`: a rebuild's first sight of them). How many.
        func recompute(_ ledgers: [String: Ledger], fresh: Bool) throws -> Int {
            let store = RollupStore(db)
            var differences: [RollupRow.Key: (value: Int64, items: Int64)] = [:]
            for (user, ledger) in ledgers.sorted(by: { $0.key < $1.key }) {
                let kept = Rollup.holder(ledger, settings: settings, rates: rates, today: today)
                var old: [RollupRow] = []
                if !fresh, let text = try store.holderRows(user) {
                    guard let rows = Deflated.unpack(text).flatMap(RollupRow.decode) else {
                        throw KeepRollupsFailure("the rollup rows kept for a holder do not read back")
                    }
                    old = rows
                }
                for row in Rollup.difference(from: old, to: kept.rows) {
                    differences[row.key, default: (0, 0)].value += row.value
                    differences[row.key, default: (0, 0)].items += row.items
                }
                try store.saveHolderRows(user, kept.rows.isEmpty ? nil : Deflated.pack(RollupRow.encode(kept.rows)))
                if !fresh || !kept.moments.isEmpty { try store.replaceMoments(of: user, with: kept.moments) }
            }
            try store.add(
                differences.compactMap { key, sum in
                    sum == (0, 0) ? nil : RollupRow(key: key, value: sum.value, items: sum.items)
                }.sorted { $0.key < $1.key })
            return ledgers.count
        }
    }
}

extension KeepRollups: Service {}

struct KeepRollupsFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
