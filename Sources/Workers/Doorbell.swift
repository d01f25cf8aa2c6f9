import Synchronization

/// Wakes one waiting task: rings that come while nobody waits are kept (as one) for the next wait.
package final class Doorbell: Sendable {
    private let state = Mutex<(rung: Bool, waiter: CheckedContinuation<Void, Never>?)>((false, nil))

    package init() {}

    package func ring() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard let waiter = state.waiter else {
                state.rung = true
                return nil
            }
            state.waiter = nil
            return waiter
        }
        waiter?.resume()
    }

    /// Returns at the next ring (at once if one came since the last wait), or on cancellation.
    package func wait() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = state.withLock { state -> Bool in
                    if state.rung || Task.isCancelled {
                        state.rung = false
                        return true
                    }
                    state.waiter = continuation
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            ring()
        }
    }

    /// Returns at the next ring or after `timeout` (real time), whichever comes first. The timer of
    /// a wait a ring ended leaves no ring behind: it would end the next wait at once, and the one
    /// after, a loop that never sleeps.
    package func wait(atMost timeout: Duration) async {
        let timer = Task { [self] in
            do { try await Task.sleep(for: timeout) } catch { return }
            ring()
        }
        await wait()
        timer.cancel()
        await timer.value
    }

    /// Whether a ring is waiting for the next ``wait()``.
    package var isRung: Bool { state.withLock { $0.rung } }
}
