import DatabaseEngine
package import Dispatch
import Foundation
import Storage
package import Workers

/// How long a wait may last before the test calls it a hang. It bounds a failure, never the time
/// the work is expected to take: a passing wait ends when what it waits for happens, however
/// loaded the machine is, and only a test that is failing anyway waits this long.
package let hangGuard: Duration = .seconds(120)

/// Waits until `worker` has gone quiet: a pass that began after this call found nothing due and
/// left nothing under way. False when it did not within ``hangGuard``.
package func settled(_ worker: Quiescence, within limit: Duration = hangGuard) async -> Bool {
    await withTaskGroup(of: Bool.self) { group in
        group.addTask {
            await worker.wait()
            return !Task.isCancelled
        }
        group.addTask {
            try? await Task.sleep(for: limit)
            return false
        }
        let first = await group.next() ?? false
        group.cancelAll()
        return first
    }
}

/// Polls `condition` every 20 ms until it holds, for what the test cannot be told of: the effect
/// of another process (a PostgreSQL standby's replay, a second instance's write). False when it
/// did not hold within ``hangGuard``.
package func eventually(within limit: Duration = hangGuard, _ condition: () async throws -> Bool) async throws -> Bool {
    let clock = ContinuousClock()
    let deadline = clock.now + limit
    while clock.now < deadline {
        if try await condition() { return true }
        try await Task.sleep(for: .milliseconds(20))
    }
    return try await condition()
}

extension DispatchSemaphore {
    /// Waits for a signal, for at most ``hangGuard``.
    package func waitGuarded() {
        _ = wait(timeout: .now() + .seconds(Int(hangGuard.components.seconds)))
    }
}

/// Returns once `semaphore` is signalled, waiting on a thread of its own.
package func signalled(_ semaphore: DispatchSemaphore) async {
    await withCheckedContinuation { continuation in
        Thread {
            semaphore.waitGuarded()
            continuation.resume()
        }.start()
    }
}

/// Waits until at least `count` sessions of the PostgreSQL database at `url` wait for a lock that
/// another holds (of any kind: an advisory lock, a row, another transaction's uncommitted key):
/// the sign that a test's concurrent transaction has reached the point it is about.
package func waitingForALock(_ url: String, count: Int = 1) async throws -> Bool {
    nonisolated(unsafe) let watcher = try Database(postgresURL: url)
    return try await eventually {
        try watcher.scalarInt(
            "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()")
            ?? 0 >= count
    }
}
