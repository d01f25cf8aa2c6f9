import Clocks
import CoreMetrics
import DatabaseEngine
package import GooglePlay
import Logging
package import ReceiptCore
import ServiceLifecycle
package import Storage
package import Workers

/// Makes the calls Google is owed for stored Play purchases: each acknowledgement (Google refunds
/// a purchase not acknowledged within three days) and, when configured, each consumption. The
/// queue is durable (`play_tokens`, ``PlayStore``): a call is claimed under a lease, made, and
/// marked done; one that fails is tried again with exponential backoff (`retry` — a restart, or
/// another instance, picks it up where it stood); one Google refuses for good (the token unknown,
/// the purchase not in a state to take it) is dropped and logged. Records
/// `google_play_acknowledgements_total{call, outcome}` and, each pass, the backlog gauges
/// (Docs/operations.md).
package final class AcknowledgePlayPurchases: UseCase, Sendable {
    /// How the queue is worked (``LeasedQueueSettings``).
    package typealias Settings = LeasedQueueSettings

    let api: PlayDeveloperAPI
    let settings: Settings
    package let context: UseCaseContext
    package let doorbell: Doorbell

    package init(context: UseCaseContext, api: PlayDeveloperAPI, settings: Settings = Settings(), doorbell: Doorbell) {
        self.api = api
        self.settings = settings
        self.context = context
        self.doorbell = doorbell
    }

    /// Told of each pass of ``LeasedQueue/run()``.
    package let quiescence = Quiescence()
    package let queueName = "the Google Play acknowledgement queue"
    package var leasing: Settings { settings }

    package func claimDue() async throws -> [PlayChore] {
        let now = clock.now()
        return try await database.write { [settings] db in
            try PlayStore(db).claim(now: now, leaseMs: settings.leaseMs, limit: settings.batch)
        }
    }

    /// One call and its outcome, stored.
    package func make(_ chore: PlayChore) async {
        let failure: PlayCallFailure?
        do {
            try await call(chore)
            failure = nil
        } catch {
            failure = error
        }
        let now = clock.now()
        let retryAt: Int64? =
            switch failure {
            case nil: nil
            // Google will never take it: the token is gone, or the purchase cannot be acknowledged.
            case .notFound, .refused: nil
            default: now + Self.backoff(attempts: chore.attempts, settings)
            }
        Counter(
            label: "google_play_acknowledgements_total",
            dimensions: [
                ("call", chore.kind.rawValue), ("outcome", failure == nil ? "done" : retryAt == nil ? "dropped" : "retry"),
            ],
            factory: metrics
        ).increment()
        if let failure {
            let level: Logger.Level = retryAt == nil ? .error : .warning
            logger.log(
                level: level, "a Google Play \(chore.kind.rawValue) failed",
                metadata: [
                    "token": "\(chore.token.reference)", "reason": "\(failure)", "attempts": "\(chore.attempts + 1)",
                    "retry_at": "\(retryAt.map(String.init) ?? "never")",
                ])
        }
        do {
            try await database.write { db in
                let store = PlayStore(db)
                if let failure {
                    try store.failed(chore, error: failure.description, retryAt: retryAt)
                } else {
                    try store.done(chore, at: now)
                }
            }
        } catch {
            // The lease runs out and the call is made again: Google takes a second acknowledgement.
            logger.error("a Google Play call's outcome could not be stored", metadata: ["error": "\(error)"])
        }
    }

    func call(_ chore: PlayChore) async throws(PlayCallFailure) {
        guard let package = PlayIdentifier(chore.token.packageName, .packageName),
            let product = PlayIdentifier(chore.token.productID, .productID),
            let token = PlayIdentifier(chore.token.purchaseToken, .purchaseToken)
        else { throw .refused(status: 0, reason: "malformed_stored_token") }
        switch chore.kind {
        case .acknowledge:
            try await api.acknowledge(
                subscription: chore.token.kind == .subscription, package: package, product: product, token: token)
        case .consume:
            try await api.consume(package: package, product: product, token: token)
        }
    }

    /// `base · 2^attempts`, at most `max` (``LeasedQueueSettings/backoff(attempts:)``).
    static func backoff(attempts: Int, _ settings: Settings) -> Int64 { settings.backoff(attempts: attempts) }

    /// The backlog's gauges.
    package func passEnded() async {
        guard let backlog = try? await database.read({ db in try PlayStore(db).backlog() }) else { return }
        let now = clock.now()
        Gauge(label: "google_play_unacknowledged_purchases", factory: metrics).record(backlog.unacknowledged)
        Gauge(label: "google_play_unacknowledged_oldest_seconds", factory: metrics)
            .record(backlog.oldestUnacknowledgedSince.map { max(0, now - $0) / 1_000 } ?? 0)
    }
}

extension AcknowledgePlayPurchases: LeasedQueue, Service {}
