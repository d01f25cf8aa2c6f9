package import AppStore
import Clocks
import CoreMetrics
import DatabaseEngine
import Entitlements
import Logging
package import ReceiptCore
import ServiceLifecycle
package import Storage
package import Workers

/// Makes the calls receiptd owes the App Store Server API (``AppStoreCallStore``), each queued
/// in the transaction of the save that made it due (``SubscriberState``):
///
/// - **Finish Transaction** (API 1.20), when the operator lets receiptd manage the delivery of
///   consumables (`appStore.finishConsumables`): "if you manage entitlement logic on your server,
///   your server can call Finish Transaction after it finishes providing the customer with the
///   new content" (https://developer.apple.com/documentation/appstoreserverapi/finish-transaction).
/// - **Set App Account Token** (API 1.16), when receiptd tells Apple whose a purchase is
///   (`appStore.setAppAccountTokens`): the person's token on the original transaction, so
///   Apple's later notifications name them
///   (https://developer.apple.com/documentation/appstoreserverapi/set-app-account-token).
///
/// Due calls are claimed under a lease and made at once; each outcome is stored: done, tried
/// again with backoff (Apple unavailable, rate-limited, a credential refused), or refused for
/// good (Apple does not know the transaction). Records `app_store_calls_total{call, outcome}` and
/// the backlog gauges (Docs/operations.md).
package final class AppStoreCalls: UseCase, Sendable {
    let serverAPI: ServerAPIClient
    let settings: LeasedQueueSettings
    package let context: UseCaseContext
    package let doorbell: Doorbell

    package init(
        context: UseCaseContext, serverAPI: ServerAPIClient, settings: LeasedQueueSettings = LeasedQueueSettings(),
        doorbell: Doorbell
    ) {
        self.serverAPI = serverAPI
        self.settings = settings
        self.context = context
        self.doorbell = doorbell
    }

    /// Told of each pass of ``LeasedQueue/run()``.
    package let quiescence = Quiescence()
    package let queueName = "the App Store call queue"
    package var leasing: LeasedQueueSettings { settings }

    package func claimDue() async throws -> [AppStoreCallStore.Call] {
        let now = clock.now()
        return try await database.write { [settings] db in
            try AppStoreCallStore(db).claim(now: now, leaseMs: settings.leaseMs, limit: settings.batch)
        }
    }

    /// How a call ended, as stored and counted.
    enum Outcome: Equatable {
        case done
        /// Apple will never take it.
        case refused(String)
        case retry(at: Int64, String)

        var metricName: String {
            switch self {
            case .done: "done"
            case .refused: "refused"
            case .retry: "retry"
            }
        }
    }

    /// What a failure means for the call: Apple not knowing the transaction (or the id or token
    /// being malformed) is for good; anything else may pass (Apple down or rate-limiting, a key
    /// being fixed), so it is tried again after `attempts`' backoff.
    static func outcome(of failure: ServerAPIFailure?, attempts: Int, now: Int64, settings: LeasedQueueSettings) -> Outcome {
        guard let failure else { return .done }
        switch failure {
        case .notFound, .invalidTransactionID, .invalidIdentifier: return .refused(failure.description)
        case .rejected(let status, _) where status == 400: return .refused(failure.description)
        default: return .retry(at: now + settings.backoff(attempts: attempts), failure.description)
        }
    }

    package func make(_ call: AppStoreCallStore.Call) async {
        var failure: ServerAPIFailure?
        do {
            guard let environment = StoreEnvironment(rawValue: call.environment) else {
                throw ServerAPIFailure.invalidTransactionID
            }
            switch call.kind {
            case .finishTransaction:
                try await serverAPI.finishTransaction(call.subject, bundleID: call.bundleID, environment: environment)
            case .setAppAccountToken:
                try await serverAPI.setAppAccountToken(
                    call.argument ?? "", originalTransactionID: call.subject, bundleID: call.bundleID, environment: environment)
            }
        } catch let error as ServerAPIFailure {
            failure = error
        } catch {
            failure = .badAnswer("\(error)")
        }
        let now = clock.now()
        let outcome = Self.outcome(of: failure, attempts: call.attempts, now: now, settings: settings)
        Counter(
            label: "app_store_calls_total", dimensions: [("call", call.kind.rawValue), ("outcome", outcome.metricName)],
            factory: metrics
        ).increment()
        switch outcome {
        case .done: break
        case .refused(let reason):
            logger.error(
                "Apple refused a call for good",
                metadata: ["call": "\(call.kind.rawValue)", "subject": "\(call.subject)", "reason": "\(reason)"])
        case .retry(let at, let reason):
            logger.warning(
                "an App Store call failed; it is tried again",
                metadata: [
                    "call": "\(call.kind.rawValue)", "subject": "\(call.subject)", "reason": "\(reason)",
                    "attempts": "\(call.attempts + 1)", "retry_at": "\(at)",
                ])
        }
        do {
            try await database.write { db in
                let store = AppStoreCallStore(db)
                switch outcome {
                case .done: try store.settle(call, outcome: "done", at: now)
                case .refused(let reason): try store.settle(call, outcome: "refused", error: reason, at: now)
                case .retry(let at, let reason): try store.failed(call, error: reason, retryAt: at)
                }
            }
        } catch {
            // The lease runs out and the call is made again: both calls are idempotent at Apple.
            logger.error("an App Store call's outcome could not be stored", metadata: ["error": "\(error)"])
        }
    }

    /// The backlog's gauges.
    package func passEnded() async {
        guard let backlog = try? await database.read({ db in try AppStoreCallStore(db).backlog() }) else { return }
        let now = clock.now()
        Gauge(label: "app_store_calls_pending", factory: metrics).record(backlog.pending)
        Gauge(label: "app_store_calls_oldest_seconds", factory: metrics)
            .record(backlog.oldestQueuedAt.map { max(0, now - $0) / 1_000 } ?? 0)
    }
}

extension AppStoreCalls: LeasedQueue, Service {}
