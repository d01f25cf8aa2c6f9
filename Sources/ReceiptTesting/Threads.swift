import Foundation

/// Runs blocking work (a libpq or SQLite call that waits on a lock or a server, a child process)
/// on a thread of its own and awaits it: never on Swift concurrency's few shared threads, where a
/// blocked caller stalls every other test and the servers' handlers.
package func onItsOwnThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try body() }) }.start()
    }
}
