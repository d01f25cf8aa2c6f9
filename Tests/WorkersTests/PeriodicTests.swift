import Clocks
import Synchronization
import Testing

@testable import Workers

@Suite("Periodic: a pass, then the interval, until shutdown")
struct PeriodicTests {
    /// Sleeps return at once; each is recorded.
    final class Sleeps: MonotonicClock {
        let slept = Mutex<[Duration]>([])
        var now: Duration { .zero }
        func sleep(for duration: Duration) async {
            slept.withLock { $0.append(duration) }
            await Task.yield()
        }
    }

    @Test func eachPassIsFollowedByTheIntervalUntilCancelled() async {
        let clock = Sleeps()
        let passes = Mutex(0)
        let periodic = Periodic(everyMs: 250, monotonic: clock)
        let running = Task {
            await periodic.run {
                let n = passes.withLock { n in
                    n += 1
                    return n
                }
                if n == 3 { withUnsafeCurrentTask { $0?.cancel() } }
            }
        }
        await running.value
        #expect(passes.withLock { $0 } == 3)
        // The pass that saw cancellation still sleeps (at once, cancelled), then the loop ends.
        #expect(clock.slept.withLock { $0 } == [.milliseconds(250), .milliseconds(250), .milliseconds(250)])
    }

    @Test func offItMakesNoPassAndEndsWithTheTask() async {
        let passes = Mutex(0)
        let periodic = Periodic(everyMs: 1, enabled: false, monotonic: Sleeps())
        let running = Task { await periodic.run { passes.withLock { $0 += 1 } } }
        running.cancel()
        await running.value
        #expect(passes.withLock { $0 } == 0)
    }
}
