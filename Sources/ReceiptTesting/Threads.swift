import Foundation

/// Runs blocking work (a libpq or SQLite call that waits on a lock or a server, a child process)
/// on a thread of its own and awaits it: never on Swift concurrency's few shared threads, where a
/// blocked caller stalls every other test and the servers' handlers.
package func onItsOwnThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try body() }) }.start()
    }
}

/// The one lane for tests' long CPU-bound work (an engine held to rollups over a whole sample
/// business, say): such work waits its turn here, one at a time, off Swift concurrency's shared
/// threads. On two cores, two such tests on the pool held both of its threads for a minute and
/// the loopback servers' handlers waited past their clients' timeouts.
package func onTheHeavyLane<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        heavyLane.async { continuation.resume(with: Result { try body() }) }
    }
}

private let heavyLane = DispatchQueue(label: "receiptd.tests.heavy-lane", qos: .utility)
