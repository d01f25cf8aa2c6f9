import Synchronization
import Testing

@testable import Resilience

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
                        // Until all 100 have joined.
                        while flights.callers(of: "same receipt") < 100 { await Task.yield() }
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
                        // Until the cap is reached (or too few are left to reach it): were it not
                        // held, more would join meanwhile.
                        while now.with({ $0.running < min(3, 40 - $0.done) }) { await Task.yield() }
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

/// Shared mutable state for concurrent test tasks.
private final class Shared<T: Sendable>: Sendable {
    private let value: Mutex<T>
    init(_ value: T) { self.value = Mutex(value) }
    func with<R: Sendable>(_ body: (inout T) -> R) -> R { value.withLock { body(&$0) } }
}
