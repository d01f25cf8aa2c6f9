import Clocks
import DatabaseEngine
import Logging
package import ReceiptCore
import Storage
package import Webhooks
package import Workers

/// What operators do with webhooks: list deliveries, send one again, replay an endpoint's events
/// from a time, and see each endpoint's backlog.
package struct WebhookOperations: UseCase, Sendable {
    let settings: WebhookSettings
    package let context: UseCaseContext
    let doorbell: Doorbell

    package init(context: UseCaseContext, settings: WebhookSettings, doorbell: Doorbell) {
        self.settings = settings
        self.context = context
        self.doorbell = doorbell
    }

    /// `limit` deliveries with ids below `before`, newest first, filtered.
    package func deliveries(
        status: Delivery.Status?, endpoint: String?, appUserID: String?, limit: Int, before: Int64?
    ) async throws(ReceiptError) -> Listings.Page<Delivery, Int64> {
        let stored = status.map { WebhookDelivery.Status(rawValue: $0.rawValue)! }
        let rows = try await run(write: false) { db in
            try WebhookStore(db).deliveries(
                status: stored, endpoint: endpoint, appUserID: appUserID, limit: limit + 1, before: before)
        }
        return Listings.Page(of: rows.map(Delivery.init), limit: limit, cursor: \.id)
    }

    /// Queues a delivery again now (behind what its subscriber's queue is sending), with a fresh
    /// retry window; the delivery as it now stands.
    package func retry(_ id: Int64) async throws(ReceiptError) -> Delivery {
        let now = clock.now()
        let requeued = try await run(write: true) { db in try WebhookStore(db).requeue(id, now: now) }
        switch requeued {
        case .notFound: throw .webhookDeliveryNotFound
        case .inFlight: throw .webhookDeliveryInFlight
        case .queued(let delivery):
            doorbell.ring()
            return Delivery(delivery)
        }
    }

    /// Queues to `endpoint` again every stored message created at or after `since` that it takes
    /// (as first sent: same id, same version), each subscriber's in order. How many were queued.
    package func replay(_ endpoint: String, since: Int64) async throws(ReceiptError) -> Int {
        guard let target = settings.endpoint(endpoint) else { throw .webhookEndpointNotFound }
        var (queued, after) = (0, Int64(0))
        while true {
            let now = clock.now()
            // In slices: other writes go between them.
            let slice = try await run(write: true) { [after] db in
                try WebhookStore(db).replay(to: endpoint, since: since, after: after, limit: 500, now: now) {
                    target.accepts(type: $0, bundleID: $1)
                }
            }
            queued += slice.queued
            guard let last = slice.last else { break }
            after = last
        }
        logger.notice("webhooks replayed", metadata: ["endpoint": "\(endpoint)", "since": "\(since)", "queued": "\(queued)"])
        doorbell.ring()
        return queued
    }

    /// One endpoint's backlog.
    package struct EndpointStatus: Sendable, Equatable {
        package var name: String
        package var pending: Int
        /// Seconds since the oldest pending delivery was created; 0 when none is pending.
        package var oldestPendingSeconds: Int64
    }

    /// Every configured endpoint's backlog.
    package func status() async throws(ReceiptError) -> [EndpointStatus] {
        guard !settings.endpoints.isEmpty else { return [] }  // webhooks off: /readyz reads nothing more
        let backlog = try await run(write: false) { db in try WebhookStore(db).backlog() }
        let now = clock.now()
        return settings.endpoints.map { e in
            let (pending, oldest) = backlog[e.name] ?? (0, now)
            return EndpointStatus(name: e.name, pending: pending, oldestPendingSeconds: max(0, now - oldest) / 1000)
        }
    }

    private func run<T: Sendable>(write: Bool, _ body: @escaping @Sendable (Database) throws -> T) async throws(ReceiptError)
        -> T
    {
        do {
            return write ? try await database.write(body) : try await database.read(body)
        } catch {
            logger.error("a webhook operation failed", metadata: ["error": "\(error)"])
            throw .internalFault
        }
    }
}
