#if canImport(Glibc)
    import Glibc
#endif

/// Wall time: the instant of now in epoch milliseconds, as Apple and storage count it. Injected
/// everywhere "now" matters, so tests move time by hand.
package struct WallClock: Sendable {
    private let read: @Sendable () -> Int64

    package init(_ read: @escaping @Sendable () -> Int64) { self.read = read }

    /// Epoch milliseconds.
    package func now() -> Int64 { read() }

    /// The system's real-time clock.
    package static let system = WallClock {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return Int64(spec.tv_sec) * 1000 + Int64(spec.tv_nsec) / 1_000_000
    }
}

/// Monotonic time and sleeping: durations, deadlines, pacing and back-off. Injected so retries and
/// pacing are tested without waiting.
package protocol MonotonicClock: Sendable {
    /// A monotonic reading; only differences matter.
    var now: Duration { get }
    func sleep(for duration: Duration) async
}

/// The real monotonic clock.
package struct SystemMonotonicClock: MonotonicClock {
    private let origin = ContinuousClock.now
    package init() {}
    package var now: Duration { ContinuousClock.now - origin }
    package func sleep(for duration: Duration) async { try? await Task.sleep(for: duration) }
}

extension Duration {
    /// Whole milliseconds (rounded down).
    package var milliseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }
}
