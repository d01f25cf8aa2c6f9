import Synchronization

/// Work a request starts and does not wait for (a shadow comparison, the answer to a consumption
/// request), counted while it runs: shutdown lets it end before the transports close, and a test
/// waits for it instead of a number of seconds.
package final class BackgroundWork: Sendable {
    private let state = Mutex<(running: Int, waiters: [CheckedContinuation<Void, Never>])>((0, []))

    package init() {}

    /// Starts `work` without waiting for it.
    package func start(_ work: @escaping @Sendable () async -> Void) {
        state.withLock { $0.running += 1 }
        Task {
            await work()
            let waiters = state.withLock { state in
                state.running -= 1
                guard state.running == 0 else { return [CheckedContinuation<Void, Never>]() }
                defer { state.waiters = [] }
                return state.waiters
            }
            for waiter in waiters { waiter.resume() }
        }
    }

    /// How much of the work started here is running.
    package var running: Int { state.withLock { $0.running } }

    /// Returns once no work started here is running (at once when none is).
    package func idle() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = state.withLock { state -> Bool in
                guard state.running > 0 else { return true }
                state.waiters.append(continuation)
                return false
            }
            if now { continuation.resume() }
        }
    }
}
