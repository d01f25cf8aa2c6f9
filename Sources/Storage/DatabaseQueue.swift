import Dispatch

/// Serializes access to one ``Database`` on a dispatch queue of its own, so blocking SQLite calls
/// never run on Swift's cooperative pool. The only way async code reaches the database.
public final class DatabaseQueue: @unchecked Sendable {
    private let database: Database
    private let queue: DispatchQueue

    /// Opens the database at `path` (see ``Database/init(path:busyTimeout:)``).
    public init(path: String, busyTimeout: Duration = .seconds(5)) throws(StorageError) {
        database = try Database(path: path, busyTimeout: busyTimeout)
        queue = DispatchQueue(label: "receiptd.sqlite")
    }

    /// The database file's path.
    public var path: String { database.path }

    /// Runs `body` with exclusive use of the connection, off the cooperative pool.
    public func run<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            queue.async {
                continuation.resume(with: Result { try body(self.database) })
            }
        }
    }

    /// Runs `body` synchronously on the queue; for start-up and command-line tools only.
    public func runBlocking<T>(_ body: (Database) throws -> T) rethrows -> T {
        try queue.sync { try body(database) }
    }
}
