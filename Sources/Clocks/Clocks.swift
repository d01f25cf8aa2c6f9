#if canImport(Glibc)
    import Glibc
#endif

/// Wall time: the instant of now in epoch milliseconds, as Apple and storage count it. Injected
/// everywhere "now" matters, so tests move time by hand.
public struct WallClock: Sendable {
    private let read: @Sendable () -> Int64

    public init(_ read: @escaping @Sendable () -> Int64) { self.read = read }

    /// Epoch milliseconds.
    public func now() -> Int64 { read() }

    /// The system's real-time clock.
    public static let system = WallClock {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return Int64(spec.tv_sec) * 1000 + Int64(spec.tv_nsec) / 1_000_000
    }
}

/// Monotonic time and sleeping: durations, deadlines, pacing and back-off. Injected so retries and
/// pacing are tested without waiting.
public protocol MonotonicClock: Sendable {
    /// A monotonic reading; only differences matter.
    var now: Duration { get }
    func sleep(for duration: Duration) async
}

/// The real monotonic clock.
public struct SystemMonotonicClock: MonotonicClock {
    private let origin = ContinuousClock.now
    public init() {}
    public var now: Duration { ContinuousClock.now - origin }
    public func sleep(for duration: Duration) async { try? await Task.sleep(for: duration) }
}

extension Duration {
    /// Whole milliseconds (rounded down).
    public var milliseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }
}
