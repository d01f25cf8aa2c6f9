package import Clocks
import ServiceLifecycle

/// Work done at start and then every interval until the service group shuts down: the
/// refresher's scan, the catch-ups of notifications and of voided purchases, the chart rollups'
/// keeper. A pass under way at shutdown is cancelled; each says in its own terms what that leaves.
package struct Periodic: Sendable {
    /// Between the end of one pass and the start of the next.
    package var intervalMs: Int64
    /// Off: ``run(_:)`` only waits for shutdown.
    package var enabled: Bool
    package var monotonic: any MonotonicClock

    package init(everyMs intervalMs: Int64, enabled: Bool = true, monotonic: any MonotonicClock) {
        self.intervalMs = intervalMs
        self.enabled = enabled
        self.monotonic = monotonic
    }

    /// `pass`, then a sleep of `intervalMs`, again and again until graceful shutdown.
    package func run(_ pass: @escaping @Sendable () async -> Void) async {
        guard enabled else {
            try? await gracefulShutdown()
            return
        }
        await cancelWhenGracefulShutdown { [self] in
            while !Task.isCancelled {
                await pass()
                await monotonic.sleep(for: .milliseconds(intervalMs))
            }
        }
    }
}
