package import AppStore
import Clocks
import CoreMetrics
import DatabaseEngine
package import Entitlements
package import GooglePlay
import Identifiers
import Logging
import ServiceLifecycle
package import Storage
import Synchronization
import Workers

/// Re-validates stored subscriptions in the background (Docs/app-store.md "Refresher"): those that expired,
/// or are in billing retry or grace, since Apple last spoke about them. A subscription with a
/// stored latest receipt is asked of verifyReceipt; one without (StoreKit 2), or every one when
/// `appStore.verifier` is `server_api`, of the App Store Server API's Get All Subscription
/// Statuses, when a key is configured. Each is claimed in
/// the database first (a lease: never two refreshes of one subscription at once, and a claim left by
/// a killed process runs out), paced to `maxPerSecond`, and stored through the same
/// `SubscriberState.save` as a posted receipt: the same facts, versions and events. Apple being
/// down never changes what is stored; the subscription backs off and is tried again.
package final class Refresher: UseCase, Sendable {
    package struct Settings: Sendable, Equatable {
        package init(
            enabled: Bool = false, intervalMs: Int64 = 60_000, batchSize: Int = 100, maxPerSecond: Double = 5.0,
            leaseMs: Int64 = 600_000, policy: RefreshPolicy = RefreshPolicy()
        ) {
            self.enabled = enabled
            self.intervalMs = intervalMs
            self.batchSize = batchSize
            self.maxPerSecond = maxPerSecond
            self.leaseMs = leaseMs
            self.policy = policy
        }
        package var enabled = false
        /// Time between scans for due subscriptions.
        package var intervalMs: Int64 = 60_000
        /// Most subscriptions refreshed per scan.
        package var batchSize = 100
        /// Most calls to Apple per second.
        package var maxPerSecond = 5.0
        /// How long a claim lasts.
        package var leaseMs: Int64 = 600_000
        package var policy = RefreshPolicy()
    }

    /// What one pass did.
    struct Pass: Sendable, Equatable {
        var due = 0
        var refreshed = 0
        var changed = 0
        var invalid = 0
        package var unavailable = 0
        /// Stored rows whose times are not dates (``RefreshPolicy/isProcessable(_:)``): skipped, reported.
        var unprocessable = 0
        /// Claimed by another refresher, or left for the next pass after Apple stopped answering.
        var skipped = 0
    }

    let settings: Settings
    private let client: VerifyReceiptClient
    /// The App Store Server API: nil when no key is configured (then only receipts are refreshed).
    private let serverAPI: ServerAPIClient?
    /// Google Play: nil when it is off (then Play subscriptions are not refreshed).
    private let play: PlayDeveloperAPI?
    /// Every subscription through the Server API, receipts or not (`appStore.verifier` = `server_api`).
    private let preferServerAPI: Bool
    package let context: UseCaseContext
    private let bundleIDs: [String]
    /// Pacing and the pause between passes.
    /// Unprocessable rows already logged by this process (each is logged once, counted every pass).
    private let reported = Mutex<Set<Identifier>>([])
    /// `refresher_backlog` (subscriptions due at the last pass's start) and
    /// `refresher_refreshes_total{outcome}`.

    package init(
        context: UseCaseContext, settings: Settings, client: VerifyReceiptClient, serverAPI: ServerAPIClient? = nil,
        preferServerAPI: Bool = false, play: PlayDeveloperAPI? = nil, bundleIDs: [String]
    ) {
        self.play = play
        self.serverAPI = serverAPI
        self.preferServerAPI = preferServerAPI && serverAPI != nil
        self.context = context
        self.settings = settings
        self.client = client
        self.bundleIDs = bundleIDs
    }

    /// Runs a pass every `intervalMs` until the service group shuts down (a pass under way is
    /// cancelled: what it claimed is released or runs out with its lease).
    package func run() async {
        await Periodic(everyMs: settings.intervalMs, enabled: settings.enabled, monotonic: monotonic).run { [self] in
            let pass = await runPass()
            if pass.due > 0 || pass.unprocessable > 0 {
                logger.info(
                    "refresher pass",
                    metadata: [
                        "due": "\(pass.due)", "refreshed": "\(pass.refreshed)", "changed": "\(pass.changed)",
                        "invalid": "\(pass.invalid)", "unavailable": "\(pass.unavailable)", "skipped": "\(pass.skipped)",
                        "unprocessable": "\(pass.unprocessable)",
                    ])
            }
        }
    }

    /// Stored receipts read per database hop while scanning (about 10 ms of the queue each).
    static let scanSlice = 1000

    /// One scan: the due subscriptions, oldest expiry first, each claimed, asked about and stored.
    func runPass(slice: Int = scanSlice) async -> Pass {
        var pass = Pass()
        let at = clock.now()
        let policy = settings.policy
        var candidates: [RefreshCandidate] = []
        let withoutReceipt = serverAPI != nil
        do {
            // A slice of stored receipts per database hop: the scan never holds the queue long.
            var after: String?
            repeat {
                let (slice, end) = try await database.read { [after] db in
                    let store = RefreshStore(db)
                    let end = try store.sliceEnd(after: after, count: slice)
                    return (
                        try store.candidates(
                            now: at, since: at - policy.lookbackMs, after: after, through: end, limit: slice,
                            withoutReceipt: withoutReceipt),
                        end
                    )
                }
                candidates += slice
                after = end
            } while after != nil && !Task.isCancelled
        } catch {
            logger.error("refresher: cannot read candidates", metadata: ["error": "\(error)"])
            return pass
        }
        var processable: [RefreshCandidate] = []
        var unprocessable: [RefreshCandidate] = []
        for c in candidates {
            if RefreshPolicy.isProcessable(c) { processable.append(c) } else { unprocessable.append(c) }
        }
        pass.unprocessable = unprocessable.count
        Gauge(label: "refresher_unprocessable_rows", factory: metrics).record(unprocessable.count)
        for c in unprocessable where reported.withLock({ $0.insert(Identifier(c.originalTransactionID)).inserted }) {
            logger.error(
                "refresher: skipping a stored subscription whose times are not dates",
                metadata: [
                    "original_transaction_id": "\(c.originalTransactionID)", "expires_at": "\(c.expiresAt)",
                    "grace_period_expires_at": "\(c.gracePeriodExpiresAt.map(String.init) ?? "none")",
                ])
        }
        let allDue = processable.compactMap { c in policy.dueAt(c).flatMap { $0 <= at ? (c, $0) : nil } }
        Gauge(label: "refresher_backlog", factory: metrics).record(allDue.count)
        let due = allDue.sorted { ($0.1, $0.0.originalTransactionID) < ($1.1, $1.0.originalTransactionID) }
            .prefix(settings.batchSize)
        pass.due = due.count
        let pace = Duration.seconds(1.0 / max(settings.maxPerSecond, 0.001))
        var appleDown = false
        for (candidate, _) in due {
            if Task.isCancelled || appleDown {
                pass.skipped += 1
                continue
            }
            let started = monotonic.now
            let outcome = await refresh(candidate)
            switch outcome {
            case .claimedElsewhere: pass.skipped += 1
            case .refreshed(let changes):
                pass.refreshed += 1
                if changes > 0 { pass.changed += 1 }
            case .invalid: pass.invalid += 1
            case .unavailable:
                pass.unavailable += 1
                appleDown = true  // the rest wait for the next pass; the breaker paces the probes
            }
            let spent = monotonic.now - started
            if spent < pace { await monotonic.sleep(for: pace - spent) }
        }
        return pass
    }

    /// Support's "refresh from Apple": asks Apple now about every purchase `appUserID` holds
    /// (an alias: the subscriber it names), as a pass would, and stores what Apple says. Each
    /// purchase's outcome by original transaction id; a purchase another refresh holds is
    /// `claimed_elsewhere`. Apple being down stores nothing and revokes nothing.
    package func refreshNow(_ appUserID: String) async throws(ReceiptError) -> [(original: String, outcome: String)] {
        let now = clock.now()
        let subscriber: SubscriberRecord?
        do {
            subscriber = try await database.read { db in try ReceiptStore(db).subscriber(appUserID) }
        } catch {
            logger.error("refresh: cannot read the subscriber", metadata: ["error": "\(error)"])
            throw .internalFault
        }
        guard let subscriber else { throw .subscriberNotFound }
        var expiries: [Identifier: Int64] = [:]
        for p in subscriber.purchases {
            let original = Identifier(p.fact.originalTransactionID)
            expiries[original] = max(expiries[original] ?? 0, p.fact.expiresDate ?? 0)
        }
        var outcomes: [(String, String)] = []
        for (key, expiresAt) in expiries.sorted(by: { $0.key < $1.key }) {
            let original = key.string
            let candidate = RefreshCandidate(
                originalTransactionID: original, holder: subscriber.appUserID, expiresAt: expiresAt, inBillingRetry: false,
                gracePeriodExpiresAt: nil, lastCheckedAt: nil, failures: 0, nextAttemptAt: now)
            let outcome = await refresh(candidate)
            outcomes.append((original, outcome.metricName))
        }
        return outcomes
    }

    package enum Outcome: Sendable, Equatable {
        case claimedElsewhere
        case refreshed(changes: Int)
        case invalid
        case unavailable

        var metricName: String {
            switch self {
            case .claimedElsewhere: "claimed_elsewhere"
            case .refreshed(let changes): changes > 0 ? "changed" : "unchanged"
            case .invalid: "invalid"
            case .unavailable: "unavailable"
            }
        }
    }

    /// What a claim found: the stored latest receipt, if any, and the app the subscription is in.
    private struct Claimed {
        var receipt: (receiptData: String, environment: String)?
        var app: (bundleID: String, environment: String)?
        /// A Google Play subscription's newest token.
        var playToken: PlayToken?
    }

    /// Claims `candidate`, asks Apple about it (its latest receipt, or the Server API), stores what
    /// Apple says, and counts the outcome in `refresher_refreshes_total`.
    package func refresh(_ candidate: RefreshCandidate) async -> Outcome {
        let outcome = await attempt(candidate)
        Counter(label: "refresher_refreshes_total", dimensions: [("outcome", outcome.metricName)], factory: metrics)
            .increment()
        return outcome
    }

    private func attempt(_ candidate: RefreshCandidate) async -> Outcome {
        let original = candidate.originalTransactionID
        let at = clock.now()
        let lease = settings.leaseMs
        let claimed: Claimed?
        do {
            claimed = try await database.write { db in
                let store = RefreshStore(db)
                guard try store.claim(original, now: at, until: at + lease) else { return nil }
                return Claimed(
                    receipt: try store.latestReceipt(original), app: try store.app(of: original),
                    playToken: try PlayStore(db).newestToken(ofChain: original))
            }
        } catch {
            logger.error("refresher: cannot claim", metadata: ["original_transaction_id": "\(original)", "error": "\(error)"])
            return .claimedElsewhere
        }
        guard let claimed else { return .claimedElsewhere }
        do {
            if let token = claimed.playToken {
                guard let play else {
                    try await database.write { db in try RefreshStore(db).release(original) }
                    return .claimedElsewhere
                }
                return try await refresh(candidate, token: token, play: play)
            }
            if let serverAPI, preferServerAPI || claimed.receipt == nil, let app = claimed.app {
                return try await refresh(candidate, bundleID: app.bundleID, serverAPI: serverAPI)
            }
            guard let receipt = claimed.receipt else {
                try await database.write { db in try RefreshStore(db).release(original) }
                return .claimedElsewhere
            }
            return try await refresh(candidate, receiptData: receipt.receiptData)
        } catch {
            logger.error("refresher: cannot store", metadata: ["original_transaction_id": "\(original)", "error": "\(error)"])
            try? await database.write { db in try RefreshStore(db).release(original) }
            return .unavailable
        }
    }

    /// A StoreKit 2 subscription (or any, in `server_api` mode): Get All Subscription Statuses.
    private func refresh(_ candidate: RefreshCandidate, bundleID: String, serverAPI: ServerAPIClient) async throws -> Outcome {
        let original = candidate.originalTransactionID
        let started = monotonic.now
        let statuses: ServerAPIClient.Statuses
        do {
            statuses = try await serverAPI.subscriptionStatuses(of: original, bundleID: bundleID)
        } catch {
            let done = clock.now()
            let entry = VerificationLogEntry(
                appUserID: candidate.holder, environment: nil, appleStatus: nil, outcome: .failed(.serverAPI, error.metricName),
                attempts: 1, latencyMs: (monotonic.now - started).milliseconds)
            switch error {
            case .notFound, .invalidTransactionID, .invalidIdentifier:
                // Apple does not know it (any more), or could not (not an id of Apple's format,
                // never sent): nothing learned, nothing revoked.
                try await answered(original, entry.outcome, at: done, log: entry)
                return .invalid
            case .unauthorized, .rejected, .unavailable, .badAnswer, .signedData:
                try await failed(candidate, entry, at: done)
                return .unavailable
            }
        }
        let done = clock.now()
        let entry = VerificationLogEntry(
            appUserID: candidate.holder, environment: statuses.environment, appleStatus: nil, outcome: .serverAPI,
            attempts: 1, latencyMs: (monotonic.now - started).milliseconds)
        let facts = AppleFacts.facts(of: statuses, history: [])
        guard facts.purchases.allSatisfy({ $0.bundleID == bundleID }) else {
            try await answered(original, "wrong_app", at: done, log: entry)
            return .invalid
        }
        return try await store(Self.holderOnly(facts, holder: candidate.holder, original: original), candidate, entry, at: done)
    }

    /// A Google Play subscription: its newest token asked of the Play Developer API, saved through
    /// the one Play save for its holder.
    private func refresh(_ candidate: RefreshCandidate, token: PlayToken, play: PlayDeveloperAPI) async throws -> Outcome {
        let original = candidate.originalTransactionID
        let started = monotonic.now
        guard let package = PlayIdentifier(token.packageName, .packageName),
            let id = PlayIdentifier(token.purchaseToken, .purchaseToken)
        else {
            let entry = VerificationLogEntry(
                appUserID: candidate.holder, environment: nil, appleStatus: nil, outcome: .googlePlayRefused, attempts: 0,
                latencyMs: 0)
            try await answered(original, entry.outcome, at: clock.now(), log: entry)
            return .invalid
        }
        let resource: PlayRecord.Resource
        do {
            resource =
                token.kind == .subscription
                ? .subscription(try await play.subscription(package: package, token: id))
                : .product(try await play.product(package: package, token: id))
        } catch {
            let done = clock.now()
            let entry = VerificationLogEntry(
                appUserID: candidate.holder, environment: nil, appleStatus: nil, outcome: .failed(.googlePlay, error.metricName),
                attempts: 1, latencyMs: (monotonic.now - started).milliseconds)
            switch error {
            case .notFound, .refused:
                // Google no longer knows it (60 days after it ended): nothing learned, nothing revoked.
                try await answered(original, entry.outcome, at: done, log: entry)
                return .invalid
            case .forbidden, .credentials, .unavailable, .unexpected:
                try await failed(candidate, entry, at: done)
                return .unavailable
            }
        }
        let done = clock.now()
        let entry = VerificationLogEntry(
            appUserID: candidate.holder, environment: PlaySave.environment(of: resource), appleStatus: nil,
            outcome: .googlePlay, attempts: 1, latencyMs: (monotonic.now - started).milliseconds)
        let (changes, changed) = try await database.write { [state] db throws -> (Int, [String]) in
            guard try ReceiptStore(db).owner(of: original)?.isExactly(candidate.holder) == true else {
                try RefreshStore(db).answered(original, outcome: "no_owner", now: done)
                return (0, [])
            }
            let saved = try PlaySave(state: state, policy: .keep).save(
                resource, token: token.purchaseToken, package: token.packageName, for: candidate.holder, consume: false,
                in: db, now: done, log: entry)
            try RefreshStore(db).answered(original, outcome: entry.outcome, now: done)
            guard case .stored(let changes, let changed) = saved else { return (0, []) }
            return (changes, changed)
        }
        await state.settleStored(changed, database: database, now: done, logger: logger, after: "refresh")
        return .refreshed(changes: changes)
    }

    /// A subscription with a stored latest receipt: verifyReceipt.
    private func refresh(_ candidate: RefreshCandidate, receiptData: String) async throws -> Outcome {
        let original = candidate.originalTransactionID
        let verification = await client.verify(receiptData: receiptData)
        let entry = VerifyPurchase.logEntry(verification, user: candidate.holder)
        let done = clock.now()
        switch verification.result {
        case .valid(let response, let environment) where response.receipt.map({ bundleIDs.contains($0.bundleID) }) == true:
            let record = Self.holderOnly(
                AppleFacts.facts(of: response, environment: environment), holder: candidate.holder, original: original)
            return try await store(record, candidate, entry, at: done)
        case .valid:
            try await answered(original, "wrong_app", at: done, log: entry)
            return .invalid
        case .invalidReceipt:
            // Apple no longer accepts the receipt: nothing learned, nothing revoked.
            try await answered(original, "invalid_receipt", at: done, log: entry)
            return .invalid
        case .misconfigured, .unexpected, .unavailable:
            try await failed(candidate, entry, at: done)
            return .unavailable
        }
    }

    /// Stores what Apple said about the holder's own subscription, unless it changed hands meanwhile.
    private func store(_ record: VerifiedFacts, _ candidate: RefreshCandidate, _ entry: VerificationLogEntry, at done: Int64)
        async throws -> Outcome
    {
        let original = candidate.originalTransactionID
        let (changes, changed) = try await database.write { [state] db throws -> (Int, [String]) in
            // Still theirs? A transfer while Apple was asked wins: nothing is stored for them.
            guard try ReceiptStore(db).owner(of: original)?.isExactly(candidate.holder) == true else {
                try RefreshStore(db).answered(original, outcome: "no_owner", now: done)
                return (0, [])
            }
            // `keep`: the record holds only the holder's own purchase, so nothing can move.
            let stored = try state.store(record, for: candidate.holder, policy: .keep, in: db, now: done, log: entry)
            try RefreshStore(db).answered(original, outcome: entry.outcome, now: done)
            guard case .stored(let changes, let changed) = stored else { return (0, []) }
            return (changes, changed)
        }
        await state.settleStored(changed, database: database, now: done, logger: logger, after: "refresh")
        return .refreshed(changes: changes)
    }

    /// Apple did not answer (or refused receiptd): one more failure, backing off.
    private func failed(_ candidate: RefreshCandidate, _ entry: VerificationLogEntry, at done: Int64) async throws {
        let original = candidate.originalTransactionID
        let retryAt = done + settings.policy.backoff(failures: candidate.failures + 1)
        let outcome = entry.outcome
        try await database.write { db in
            // Logged under the holder only while they still hold it: erased meanwhile, their id
            // is not written back (a transfer's new holder gets their own log).
            if let holder = entry.appUserID, try ReceiptStore(db).owner(of: original)?.isExactly(holder) == true {
                try ReceiptStore(db).log(entry, at: done)
            }
            try RefreshStore(db).failed(original, outcome: outcome, retryAt: retryAt)
        }
    }

    private func answered(_ original: String, _ outcome: String, at: Int64, log: VerificationLogEntry) async throws {
        try await database.write { db in
            if let holder = log.appUserID, try ReceiptStore(db).owner(of: original)?.isExactly(holder) == true {
                try ReceiptStore(db).log(log, at: at)
            }
            try RefreshStore(db).answered(original, outcome: outcome, now: at)
        }
    }

    /// The part of a receipt about purchases its holder has: a refresh never moves another
    /// purchase on the same receipt to them.
    package static func holderOnly(_ record: VerifiedFacts, holder: String, original: String) -> VerifiedFacts {
        var record = record
        record.purchases = record.purchases.filter { $0.fact.originalTransactionID.isExactly(original) }
        record.renewals = record.renewals.filter { $0.fact.originalTransactionID.isExactly(original) }
        return record
    }
}

extension Int64 {
    /// `self + other`, pinned to `Int64.max` or `.min` instead of trapping.
    func saturatingAdd(_ other: Int64) -> Int64 {
        let (sum, overflow) = addingReportingOverflow(other)
        return overflow ? (other > 0 ? .max : .min) : sum
    }
}

extension Refresher: Service {}
