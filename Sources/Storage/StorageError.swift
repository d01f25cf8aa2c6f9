/// A failure in the storage layer, with SQLite's result code where there is one.
public struct StorageError: Error, CustomStringConvertible, Sendable, Equatable {
    public enum Code: String, Sendable {
        case open, sqlite, migrationUnknown, migrationChecksum, migrationFile, migrationFailed
    }
    /// A short low-cardinality name, e.g. `migration_checksum`.
    public let code: Code
    /// SQLite's extended result code, when SQLite reported the failure.
    public let sqliteCode: Int32?
    public let message: String

    init(_ code: Code, _ message: String, sqliteCode: Int32? = nil) {
        self.code = code
        self.message = message
        self.sqliteCode = sqliteCode
    }

    public var description: String {
        if let sqliteCode { return "\(message) (SQLite \(sqliteCode))" }
        return message
    }
}
