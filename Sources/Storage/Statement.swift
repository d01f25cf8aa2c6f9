import CSQLite

/// A compiled statement; the only owner of its `sqlite3_stmt*`, finalized in `deinit`.
/// Parameters are 1-based as in SQLite; columns are 0-based.
public final class Statement {
    private let handle: OpaquePointer
    private let database: Database

    init(_ handle: OpaquePointer, database: Database) {
        self.handle = handle
        self.database = database
    }

    deinit { sqlite3_finalize(handle) }

    /// Binds values to parameters 1...n in order; nil binds NULL.
    @discardableResult
    public func bind(_ values: [(any StatementValue)?]) throws(StorageError) -> Statement {
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
        for (offset, value) in values.enumerated() {
            let index = Int32(offset + 1)
            let rc: Int32 =
                switch value?.sqlValue {
                case .int(let v)?: sqlite3_bind_int64(handle, index, v)
                case .text(let v)?: receiptd_sqlite3_bind_text_transient(handle, index, v, -1)
                case nil: sqlite3_bind_null(handle, index)
                }
            guard rc == SQLITE_OK else { throw database.error(rc) }
        }
        return self
    }

    /// Back to the start, ending the read it had begun (bindings stay).
    public func reset() { sqlite3_reset(handle) }

    /// Advances to the next row; false when done.
    public func step() throws(StorageError) -> Bool {
        let rc = sqlite3_step(handle)
        switch rc {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default: throw database.error(rc)
        }
    }

    /// Runs the statement to completion, discarding rows.
    public func run() throws(StorageError) {
        while try step() {}
    }

    public func isNull(_ column: Int32) -> Bool { sqlite3_column_type(handle, column) == SQLITE_NULL }
    public func int(_ column: Int32) -> Int64 { sqlite3_column_int64(handle, column) }
    public func text(_ column: Int32) -> String? {
        guard let text = sqlite3_column_text(handle, column) else { return nil }
        return String(cString: text)
    }
}

/// A value a statement binds (NULL is nil), for either backend.
public enum SQLValue: Sendable, Equatable {
    case int(Int64)
    case text(String)
}

/// A Swift value a statement can bind.
public protocol StatementValue {
    var sqlValue: SQLValue { get }
}

extension Int: StatementValue {
    public var sqlValue: SQLValue { .int(Int64(self)) }
}

extension Int64: StatementValue {
    public var sqlValue: SQLValue { .int(self) }
}

extension String: StatementValue {
    public var sqlValue: SQLValue { .text(self) }
}
