import Synchronization
import Testing

@testable import AppStore

@Suite("Circuit breaker")
struct CircuitBreakerTests {
    let policy = CircuitBreaker.Policy(failureThreshold: 3, openFor: .seconds(10), maxOpenFor: .seconds(35))

    @Test func opensAfterTheThresholdOfUnavailableVerificationsInARow() {
        var b = CircuitBreaker(policy: policy)
        #expect(b.decide(now: .zero) == .allow)
        #expect(b.record(available: false, now: .seconds(1)) == nil)
        #expect(b.record(available: true, now: .seconds(2)) == nil)  // an answer resets the count
        b.record(available: false, now: .seconds(3))
        b.record(available: false, now: .seconds(4))
        #expect(b.record(available: false, now: .seconds(5)) == .open(until: .seconds(15), backoff: .seconds(10)))
        #expect(b.decide(now: .seconds(6)) == .reject(retryAfter: .seconds(9)))
    }

    @Test func halfOpenLetsOneProbeThroughAndItsOutcomeDecides() {
        var b = CircuitBreaker(policy: policy)
        for t in 1...3 { b.record(available: false, now: .seconds(t)) }  // open until 13
        #expect(b.decide(now: .seconds(13)) == .probe)
        #expect(b.state == .halfOpen(backoff: .seconds(10)))
        #expect(b.decide(now: .seconds(13)) == .reject(retryAfter: .seconds(1)))  // only one probe at a time
        // The probe fails: open again, twice as long.
        #expect(b.record(available: false, now: .seconds(14)) == .open(until: .seconds(34), backoff: .seconds(20)))
        #expect(b.decide(now: .seconds(34)) == .probe)
        // Fails again: doubling stops at maxOpenFor.
        #expect(b.record(available: false, now: .seconds(35)) == .open(until: .seconds(70), backoff: .seconds(35)))
        #expect(b.decide(now: .seconds(70)) == .probe)
        #expect(b.record(available: true, now: .seconds(71)) == .closed(failures: 0))
        #expect(b.decide(now: .seconds(71)) == .allow)
    }

    @Test func callsStartedBeforeTheOpeningDoNotExtendIt() {
        var b = CircuitBreaker(policy: policy)
        for t in 1...3 { b.record(available: false, now: .seconds(t)) }
        #expect(b.record(available: false, now: .seconds(4)) == nil)
        #expect(b.state == .open(until: .seconds(13), backoff: .seconds(10)))
        // …but one that Apple answered shows Apple is back.
        #expect(b.record(available: true, now: .seconds(5)) == .closed(failures: 0))
    }
}

/// Shared mutable state for concurrent test tasks.
private final class Shared<T: Sendable>: Sendable {
    private let value: Mutex<T>
    init(_ value: T) { self.value = Mutex(value) }
    func with<R: Sendable>(_ body: (inout T) -> R) -> R { value.withLock { body(&$0) } }
}

@Suite("Single flight and the concurrency cap")
struct SingleFlightTests {
    @Test func concurrentCallersForOneKeyShareOneRun() async {
        let flights = SingleFlight<String, Int>()
        let runs = Shared(0)
        let results = await withTaskGroup(of: (Int, Bool).self) { group in
            for _ in 0..<100 {
                group.addTask {
                    await flights.run("same receipt") {
                        runs.with { $0 += 1 }
                        try? await Task.sleep(for: .milliseconds(200))  // long enough for all 100 to join
                        return 42
                    }
                }
            }
            var all: [(Int, Bool)] = []
            for await r in group { all.append(r) }
            return all
        }
        #expect(runs.with { $0 } == 1)
        #expect(results.allSatisfy { $0.0 == 42 } && results.filter(\.1).count == 1)
        #expect(flights.count == 0)
        // Finished: the next caller runs anew.
        _ = await flights.run("same receipt") { 7 }
        #expect(runs.with { $0 } == 1)
    }

    @Test func theCapHoldsAndEveryWaiterRuns() async {
        let limit = ConcurrencyLimit(3)
        let now = Shared((running: 0, peak: 0, done: 0))
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<40 {
                group.addTask {
                    await limit.run {
                        now.with {
                            $0.running += 1
                            $0.peak = max($0.peak, $0.running)
                        }
                        try? await Task.sleep(for: .milliseconds(5))
                        now.with {
                            $0.running -= 1
                            $0.done += 1
                        }
                    }
                }
            }
        }
        let final = now.with { $0 }
        #expect(final.peak == 3 && final.done == 40)
        #expect(limit.load == (0, 0))
    }
}
