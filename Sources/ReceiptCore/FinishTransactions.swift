import AppStore
import AppStoreServerAPI
import Clocks
import CoreMetrics
import Logging
import ServiceLifecycle
import Storage
import Synchronization

/// Finishes at Apple the consumables receiptd stored for an app user, when the operator lets
/// receiptd manage their delivery (`appStore.finishConsumables`): Apple's Finish Transaction
/// (App Store Server API 1.20: "if you manage entitlement logic on your server, your server can
/// call Finish Transaction after it finishes providing the customer with the new content",
/// https://developer.apple.com/documentation/appstoreserverapi/finish-transaction). The save that
/// stores such a purchase for its holder queues the call in its own transaction
/// (``SubscriberState``, ``FinishStore``); this worker claims due calls under a lease, makes them
/// and records each outcome: done, tried again with backoff (Apple unavailable, rate-limited, a
/// credential refused), or refused for good (Apple does not know the transaction). Records
/// `app_store_finished_transactions_total{outcome}` and the backlog gauges (Docs/operations.md).
package final class FinishTransactions: Sendable {
    let serverAPI: ServerAPIClient
    let settings: CallQueueSettings
    let database: DatabaseQueue
    let doorbell: Doorbell
    let logger: Logger
    let clock: WallClock
    let metrics: any MetricsFactory

    package init(
        serverAPI: ServerAPIClient, settings: CallQueueSettings = CallQueueSettings(), database: DatabaseQueue,
        doorbell: Doorbell, logger: Logger, clock: WallClock, metrics: any MetricsFactory = NOOPMetricsHandler.instance
    ) {
        self.serverAPI = serverAPI
        self.settings = settings
        self.database = database
        self.doorbell = doorbell
        self.logger = logger
        self.clock = clock
        self.metrics = metrics
    }

    package func run() async {
        let stopping = Atomic<Bool>(false)
        await withGracefulShutdownHandler {
            while !stopping.load(ordering: .acquiring) && !Task.isCancelled {
                let made = await pass()
                if made < settings.batch { await doorbell.wait(atMost: .milliseconds(settings.pollMs)) }
            }
        } onGracefulShutdown: { [doorbell] in
            stopping.store(true, ordering: .releasing)
            doorbell.ring()
        }
    }

    /// Claims what is due, makes each call (at once), records each outcome. The number claimed.
    @discardableResult
    package func pass() async -> Int {
        let now = clock.now()
        let chores: [FinishStore.Chore]
        do {
            chores = try await database.write { [settings] db in
                try FinishStore(db).claim(now: now, leaseMs: settings.leaseMs, limit: settings.batch)
            }
        } catch {
            logger.error("the Finish Transaction queue could not be read", metadata: ["error": "\(error)"])
            return 0
        }
        await withDiscardingTaskGroup { group in
            for chore in chores { group.addTask { [self] in await make(chore) } }
        }
        await recordBacklog()
        return chores.count
    }

    /// How a call ended, as stored and counted.
    enum Outcome: Equatable {
        case finished
        /// Apple will never take it.
        case refused(String)
        case retry(at: Int64, String)

        var metricName: String {
            switch self {
            case .finished: "finished"
            case .refused: "refused"
            case .retry: "retry"
            }
        }
    }

    /// What a failure means for the call: Apple not knowing the transaction (or its id being
    /// malformed) is for good; anything else may pass (Apple down or rate-limiting, a key being
    /// fixed), so it is tried again after `attempts`' backoff.
    static func outcome(of failure: ServerAPIFailure?, attempts: Int, now: Int64, settings: CallQueueSettings) -> Outcome {
        guard let failure else { return .finished }
        switch failure {
        case .notFound, .invalidTransactionID, .invalidIdentifier: return .refused(failure.description)
        default: return .retry(at: now + settings.backoff(attempts: attempts), failure.description)
        }
    }

    func make(_ chore: FinishStore.Chore) async {
        var failure: ServerAPIFailure?
        do {
            guard let environment = AppStoreEnvironment(rawValue: chore.environment) else {
                throw ServerAPIFailure.invalidTransactionID
            }
            try await serverAPI.finishTransaction(chore.transactionID, bundleID: chore.bundleID, environment: environment)
        } catch let error as ServerAPIFailure {
            failure = error
        } catch {
            failure = .badAnswer("\(error)")
        }
        let now = clock.now()
        let outcome = Self.outcome(of: failure, attempts: chore.attempts, now: now, settings: settings)
        Counter(label: "app_store_finished_transactions_total", dimensions: [("outcome", outcome.metricName)], factory: metrics)
            .increment()
        switch outcome {
        case .finished: break
        case .refused(let reason):
            logger.error(
                "Apple refused to finish a transaction",
                metadata: ["transaction_id": "\(chore.transactionID)", "reason": "\(reason)"])
        case .retry(let at, let reason):
            logger.warning(
                "a Finish Transaction call failed; it is tried again",
                metadata: [
                    "transaction_id": "\(chore.transactionID)", "reason": "\(reason)", "attempts": "\(chore.attempts + 1)",
                    "retry_at": "\(at)",
                ])
        }
        do {
            try await database.write { db in
                let store = FinishStore(db)
                switch outcome {
                case .finished: try store.settle(chore.transactionID, outcome: "finished", at: now)
                case .refused(let reason): try store.settle(chore.transactionID, outcome: "refused", error: reason, at: now)
                case .retry(let at, let reason): try store.failed(chore.transactionID, error: reason, retryAt: at)
                }
            }
        } catch {
            // The lease runs out and the call is made again: finishing twice is harmless at Apple.
            logger.error("a Finish Transaction outcome could not be stored", metadata: ["error": "\(error)"])
        }
    }

    private func recordBacklog() async {
        guard let backlog = try? await database.read({ db in try FinishStore(db).backlog() }) else { return }
        let now = clock.now()
        Gauge(label: "app_store_unfinished_transactions", factory: metrics).record(backlog.pending)
        Gauge(label: "app_store_unfinished_oldest_seconds", factory: metrics)
            .record(backlog.oldestQueuedAt.map { max(0, now - $0) / 1_000 } ?? 0)
    }
}

extension FinishTransactions: Service {}
