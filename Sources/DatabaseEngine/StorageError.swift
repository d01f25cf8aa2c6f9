/// A failure in the storage layer, with SQLite's result code or PostgreSQL's SQLSTATE where there
/// is one.
package struct StorageError: Error, CustomStringConvertible, Sendable, Equatable {
    package enum Code: String, Sendable {
        case open, sqlite, postgres, migrationUnknown, migrationChecksum, migrationFile, migrationFailed
        /// A transaction or savepoint a part of which failed, and which was rolled back for it.
        case rolledBack
    }
    /// A short low-cardinality name, e.g. `migration_checksum`.
    package let code: Code
    /// SQLite's extended result code, when SQLite reported the failure.
    package let sqliteCode: Int32?
    /// PostgreSQL's SQLSTATE (e.g. `23505`, a unique violation), when PostgreSQL reported it.
    package let sqlState: String?
    package let message: String

    package init(_ code: Code, _ message: String, sqliteCode: Int32? = nil, sqlState: String? = nil) {
        self.code = code
        self.message = message
        self.sqliteCode = sqliteCode
        self.sqlState = sqlState
    }

    /// The SQLSTATE of a compare-and-set sent unanswered that found its row moved: the
    /// transaction it was in cannot commit (Migrations/postgresql/0044_settle_unanswered.sql).
    package static let lostCompareAndSet = "RD001"

    package var description: String {
        if let sqliteCode { return "\(message) (SQLite \(sqliteCode))" }
        if let sqlState { return "\(message) (SQLSTATE \(sqlState))" }
        return message
    }
}
