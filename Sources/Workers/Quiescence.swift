import Synchronization

/// Tells who waits when a background worker has gone quiet: a pass that began after they started
/// waiting found nothing to do and left nothing under way. Tests wait for this instead of a number
/// of seconds, which a loaded machine can always exceed; the worker reports each pass.
package final class Quiescence: Sendable {
    private struct State {
        /// Passes begun.
        var begun = 0
        /// Waiters, each with the number of passes begun when it started waiting.
        var waiters: [Int: (after: Int, continuation: CheckedContinuation<Void, Never>)] = [:]
        var nextWaiter = 0
        /// The worker stopped: nobody waits for it any more.
        var stopped = false
    }

    private let state = Mutex(State())

    package init() {}

    /// A pass begins: its number, for ``passEnded(_:quiet:)``.
    package func passBegins() -> Int {
        state.withLock { state in
            state.begun += 1
            return state.begun
        }
    }

    /// Pass `number` ended; `quiet` when it found nothing to do and left nothing under way. A quiet
    /// pass releases those who began waiting before it began.
    package func passEnded(_ number: Int, quiet: Bool) {
        guard quiet else { return }
        let released = state.withLock { state in
            let ids = state.waiters.filter { $0.value.after < number }.map(\.key)
            return ids.compactMap { state.waiters.removeValue(forKey: $0)?.continuation }
        }
        for continuation in released { continuation.resume() }
    }

    /// Whether someone waits.
    package var hasWaiters: Bool { state.withLock { !$0.waiters.isEmpty } }

    /// The worker stopped: every waiter returns, now and from now on.
    package func stop() {
        let released = state.withLock { state in
            state.stopped = true
            defer { state.waiters = [:] }
            return state.waiters.values.map(\.continuation)
        }
        for continuation in released { continuation.resume() }
    }

    /// Returns after a quiet pass that began after this call (at once when the worker stopped, or
    /// on cancellation).
    package func wait() async {
        let id = state.withLock { state in
            defer { state.nextWaiter += 1 }
            return state.nextWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = state.withLock { state -> Bool in
                    if state.stopped || Task.isCancelled { return true }
                    state.waiters[id] = (state.begun, continuation)
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { $0.waiters.removeValue(forKey: id) }
            waiter?.continuation.resume()
        }
    }
}
