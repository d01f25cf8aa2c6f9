import Clocks
import DatabaseEngine
import Entitlements
import Logging
import Storage

/// The overview's numbers (`GET /v1/admin/stats`): subscribers by product and state now, and per
/// bucket of a range, the lifecycle events, notifications and exchanges with Apple.
package struct Statistics: UseCase, Sendable {
    package let context: UseCaseContext

    package init(context: UseCaseContext) {
        self.context = context
    }

    package enum Interval: String, Sendable, CaseIterable {
        case hour, day, week
        var milliseconds: Int64 {
            switch self {
            case .hour: 3_600_000
            case .day: 86_400_000
            case .week: 7 * 86_400_000
            }
        }
    }

    /// The most buckets one report has.
    package static let maxBuckets = 1_000
    /// The most stale subscribers one report brings up to date before it counts.
    static let catchUpLimit = 200

    /// The event types every report counts, zero or not, in the order the overview shows them.
    package static let eventTypes: [String] = [
        "initial_purchase", "trial_started", "trial_converted", "renewal", "cancellation", "billing_issue", "refund",
        "expiration",
    ]

    package struct Report: Sendable {
        package var from: Int64
        package var to: Int64
        package var interval: Interval
        package var generatedAt: Int64
        /// Each bucket's start and its events per type (every type of ``eventTypes``, and any other seen).
        package var buckets: [(start: Int64, counts: [String: Int])]
        package var subscribers: Int
        /// Subscribers per product, kind and state now.
        package var products: [(kind: String, productID: String, state: String, subscribers: Int)]
        /// Subscribers left out of `products`: their stored state went stale and was not brought up
        /// to date within this report (at most ``Statistics/catchUpLimit`` are, per report).
        package var stale: Int
        package var notifications: [(type: String, outcome: String, count: Int)]
        package var verifications: [(outcome: String, count: Int)]
        /// Google Play's pushes in the range, by type and outcome, and the calls Google is owed now.
        package var playNotifications: [(type: String, outcome: String, count: Int)] = []
        package var playBacklog = PlayBacklog()
    }

    /// The calls Google is owed now (``AcknowledgePlayPurchases``'s queue).
    package struct PlayBacklog: Sendable, Equatable {
        /// Purchases waiting for their acknowledgement.
        package var unacknowledged = 0
        /// The longest waiting, since it was stored (epoch ms); nil when none waits.
        package var oldestUnacknowledgedSince: Int64?
        /// Acknowledgements that failed at least once.
        package var retrying = 0
        package var unconsumed = 0
    }

    /// The report for [from, to) in buckets of `interval` (from is rounded down to a bucket's
    /// start in UTC; a week starts on a Monday).
    package func callAsFunction(from: Int64?, to: Int64?, interval: Interval) async throws(ReceiptError) -> Report {
        let now = clock.now()
        let width = interval.milliseconds
        let end = to ?? now + 1  // what happened at `now` itself is in
        let asked = from ?? (end - 30 * 86_400_000)
        // Bucket boundaries in UTC; 1970-01-05 was a Monday.
        let origin: Int64 = interval == .week ? 4 * 86_400_000 : 0
        let start = asked - ((asked - origin) % width + width) % width
        guard start < end else { throw .invalidRequest("`from` must be before `to`.") }
        let count = (end - start + width - 1) / width
        guard count <= Self.maxBuckets else {
            throw .invalidRequest("The range has \(count) buckets of a \(interval.rawValue); at most \(Self.maxBuckets).")
        }
        await catchUp(now: now)
        do {
            return try await database.read { db in
                var buckets: [(Int64, [String: Int])] = (0..<Int(count)).map { i in
                    (start + Int64(i) * width, Dictionary(uniqueKeysWithValues: Self.eventTypes.map { ($0, 0) }))
                }
                for row in try EventStore(db).counts(from: start, to: end, width: width)
                where buckets.indices.contains(row.bucket) {
                    buckets[row.bucket].1[row.type, default: 0] += row.count
                }
                let products = ProductStateStore(db)
                return Report(
                    from: start, to: end, interval: interval, generatedAt: now, buckets: buckets,
                    subscribers: try products.subscriberCount(),
                    products: try products.counts(at: now).map {
                        (kind: $0.entry.kind, productID: $0.entry.productID, state: $0.entry.state, subscribers: $0.subscribers)
                    },
                    stale: try products.staleCount(at: now),
                    notifications: try NotificationStore(db).counts(from: start, to: end),
                    verifications: try ReceiptStore(db).verificationCounts(from: start, to: end),
                    playNotifications: try PlayStore(db).notificationCounts(from: start, to: end),
                    playBacklog: PlayBacklog(try PlayStore(db).backlog()))
            }
        } catch {
            logger.error("the statistics could not be read", metadata: ["error": "\(error)"])
            throw .internalFault
        }
    }

    /// Brings up to ``catchUpLimit`` subscribers whose stored state went stale (time passed an
    /// expiry, or their facts changed and nobody read them since) up to date, as a read would.
    private func catchUp(now: Int64) async {
        do {
            let stale = try await database.read { db in try ProductStateStore(db).stale(at: now, limit: Self.catchUpLimit) }
            for user in stale { _ = try await state.current(user, database: database, now: now) }
        } catch {
            logger.warning("stale subscriber states were not all brought up to date", metadata: ["error": "\(error)"])
        }
    }
}

extension Statistics.PlayBacklog {
    init(_ b: PlayStore.Backlog) {
        self.init(
            unacknowledged: b.unacknowledged, oldestUnacknowledgedSince: b.oldestUnacknowledgedSince, retrying: b.retrying,
            unconsumed: b.unconsumed)
    }
}
