package import Clocks
package import CoreMetrics
package import DatabaseEngine
package import Logging
import Storage

/// What every use case works with, built once by the composition root and handed to each: the
/// database, the rules that save a person's facts and derive their state, who may move a
/// purchase, the log, the two clocks and the metrics.
package struct UseCaseContext: Sendable {
    package var database: DatabaseQueue
    package var state: SubscriberState
    package var policy: OwnershipPolicy
    package var logger: Logger
    /// Wall time: stored dates, documents, leases.
    package var clock: WallClock
    /// Durations and waits: retries, pacing, deadlines.
    package var monotonic: any MonotonicClock
    package var metrics: any MetricsFactory

    package init(
        database: DatabaseQueue, state: SubscriberState,
        policy: OwnershipPolicy = .transfer, logger: Logger, clock: WallClock,
        monotonic: any MonotonicClock = SystemMonotonicClock(), metrics: any MetricsFactory = NOOPMetricsHandler.instance
    ) {
        self.database = database
        self.state = state
        self.policy = policy
        self.logger = logger
        self.clock = clock
        self.monotonic = monotonic
        self.metrics = metrics
    }
}

/// A use case: it reads the parts of its ``UseCaseContext`` by their names.
package protocol UseCase {
    var context: UseCaseContext { get }
}

extension UseCase {
    package var database: DatabaseQueue { context.database }
    package var state: SubscriberState { context.state }
    package var policy: OwnershipPolicy { context.policy }
    package var logger: Logger { context.logger }
    package var clock: WallClock { context.clock }
    package var monotonic: any MonotonicClock { context.monotonic }
    package var metrics: any MetricsFactory { context.metrics }
}
