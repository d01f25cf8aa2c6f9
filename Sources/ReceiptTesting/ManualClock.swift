package import Clocks
import Synchronization

/// Wall time moved by hand (epoch ms), for the service and its simulator alike.
package final class TestClock: Sendable {
    private let value: Mutex<Int64>
    package init(_ start: Int64 = 1_790_000_000_000) { value = Mutex(start) }
    package var now: Int64 { value.withLock { $0 } }
    package func advance(by ms: Int64) { value.withLock { $0 += ms } }
    /// This clock as the service reads it.
    package var wall: WallClock { WallClock { [self] in now } }
}

/// Monotonic time moved by hand: `sleep` returns at once and advances the reading, so code that
/// paces, backs off or times out runs without waiting.
package final class ManualMonotonicClock: MonotonicClock {
    private let reading = Mutex<Duration>(.zero)
    package init() {}
    package var now: Duration { reading.withLock { $0 } }
    package func advance(by duration: Duration) { reading.withLock { $0 += duration } }
    package func sleep(for duration: Duration) async { advance(by: duration) }
}
