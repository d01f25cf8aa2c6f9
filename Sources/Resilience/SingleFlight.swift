import Synchronization

/// Runs one operation per key at a time and gives its result to every caller that asked for the
/// same key meanwhile (the same receipt posted 100 times at once costs one Apple call).
/// Callers arriving after it finished start a new one: nothing is cached.
package final class SingleFlight<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    private let inFlight = Mutex<[Key: (task: Task<Value, Never>, callers: Int)]>([:])

    package init() {}

    /// The value of `operation` for `key`, shared with the callers that asked while it ran; and
    /// whether this caller started it.
    package func run(_ key: Key, _ operation: @escaping @Sendable () async -> Value) async -> (value: Value, leader: Bool) {
        let (task, leader) = inFlight.withLock { flights -> (Task<Value, Never>, Bool) in
            if let running = flights[key] {
                flights[key]?.callers += 1
                return (running.task, false)
            }
            let task = Task { await operation() }
            flights[key] = (task, 1)
            return (task, true)
        }
        let value = await task.value
        if leader { inFlight.withLock { _ = $0.removeValue(forKey: key) } }
        return (value, leader)
    }

    /// Keys with an operation running now.
    package var count: Int { inFlight.withLock { $0.count } }

    /// How many callers share the operation running for `key` (0 when none runs).
    package func callers(of key: Key) -> Int { inFlight.withLock { $0[key]?.callers ?? 0 } }

    /// How many callers wait for an operation, whatever its key.
    package var callers: Int { inFlight.withLock { $0.values.reduce(0) { $0 + $1.callers } } }
}

/// At most `limit` operations at once; the others wait their turn, first come first served
/// (a cap on concurrent Apple calls).
package final class ConcurrencyLimit: Sendable {
    private let state: Mutex<(running: Int, waiting: [CheckedContinuation<Void, Never>])>
    package let limit: Int

    package init(_ limit: Int) {
        precondition(limit > 0)
        self.limit = limit
        state = Mutex((0, []))
    }

    package func run<T: Sendable>(_ operation: () async -> T) async -> T {
        await acquire()
        defer { release() }
        return await operation()
    }

    private func acquire() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let go = state.withLock { s -> Bool in
                guard s.running < limit else {
                    s.waiting.append(continuation)
                    return false
                }
                s.running += 1
                return true
            }
            if go { continuation.resume() }
        }
    }

    private func release() {
        let next = state.withLock { s -> CheckedContinuation<Void, Never>? in
            guard !s.waiting.isEmpty else {
                s.running -= 1
                return nil
            }
            return s.waiting.removeFirst()  // the slot passes straight to the next waiter
        }
        next?.resume()
    }

    /// Operations running and waiting now.
    package var load: (running: Int, waiting: Int) { state.withLock { ($0.running, $0.waiting.count) } }
}
