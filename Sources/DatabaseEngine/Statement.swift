import CSQLite

/// A compiled statement: SQLite's (the only owner of its `sqlite3_stmt*`, finalized in `deinit`)
/// or a ``PostgresStatement``. Parameters are 1-based as in SQLite; columns are 0-based.
package final class Statement {
    private enum Handle {
        case sqlite(OpaquePointer)
        case postgres(PostgresStatement)
    }

    private let handle: Handle
    /// The database, for its errors. A statement the database caches holds it weakly (the
    /// database holds the statement: a strong reference back kept every database that had cached
    /// one open until the process ended); one handed out by ``Database/prepare(_:)`` keeps its
    /// database alive as long as it lives (`keptOpen`), as a caller may drop the database first.
    private weak var database: Database?
    private let keptOpen: Database?

    init(_ handle: OpaquePointer, database: Database, keepingItOpen: Bool) {
        self.handle = .sqlite(handle)
        self.database = database
        keptOpen = keepingItOpen ? database : nil
    }

    init(_ statement: PostgresStatement, database: Database, keepingItOpen: Bool) {
        handle = .postgres(statement)
        self.database = database
        keptOpen = keepingItOpen ? database : nil
    }

    /// The error for SQLite result code `rc`, in the database's words while it is open.
    private func error(_ rc: Int32) -> StorageError {
        database?.error(rc) ?? StorageError(.sqlite, "SQLite error \(rc)", sqliteCode: rc)
    }

    deinit { if case .sqlite(let handle) = handle { sqlite3_finalize(handle) } }

    /// Binds values to parameters 1...n in order; nil binds NULL.
    @discardableResult
    package func bind(_ values: [(any StatementValue)?]) throws(StorageError) -> Statement {
        let handle: OpaquePointer
        switch self.handle {
        case .sqlite(let h): handle = h
        case .postgres(let statement):
            try statement.bind(values)
            return self
        }
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
            guard rc == SQLITE_OK else { throw error(rc) }
        }
        return self
    }

    /// Back to the start, ending the read it had begun (bindings stay).
    package func reset() {
        switch handle {
        case .sqlite(let handle): sqlite3_reset(handle)
        case .postgres(let statement): statement.reset()
        }
    }

    /// Advances to the next row; false when done.
    package func step() throws(StorageError) -> Bool {
        let handle: OpaquePointer
        switch self.handle {
        case .sqlite(let h): handle = h
        case .postgres(let statement): return try statement.step()
        }
        let rc = sqlite3_step(handle)
        switch rc {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default: throw error(rc)
        }
    }

    /// The PostgreSQL statement, for a pipeline (nil on SQLite).
    var postgres: PostgresStatement? {
        if case .postgres(let statement) = handle { statement } else { nil }
    }

    /// Runs the statement to completion, discarding rows.
    package func run() throws(StorageError) {
        if case .postgres(let statement) = handle { return try statement.run() }
        while try step() {}
    }

    /// ``run()``, but on PostgreSQL, in a transaction, sent with the next statement whose answer
    /// is awaited (or the commit), in one round trip: for a write whose answer nobody reads
    /// (rows changed included), that can fail only when its whole transaction does (a lost
    /// connection, a deadlock: the transaction is run again), since its error is thrown there.
    /// On SQLite, in-process, it is ``run()``.
    package func runLater() throws(StorageError) {
        if case .postgres(let statement) = handle { return try statement.runLater() }
        while try step() {}
    }

    /// How many columns the current row has (after a step that gave one).
    package var columnCount: Int32 {
        switch handle {
        case .sqlite(let handle): sqlite3_column_count(handle)
        case .postgres(let statement): statement.columnCount
        }
    }

    /// A column's name, as the SQL names it.
    package func columnName(_ column: Int32) -> String {
        switch handle {
        case .sqlite(let handle): sqlite3_column_name(handle, column).map { String(cString: $0) } ?? ""
        case .postgres(let statement): statement.columnName(column)
        }
    }

    /// Whether the current row's value in `column` is an integer (else text, or NULL).
    package func isInteger(_ column: Int32) -> Bool {
        switch handle {
        case .sqlite(let handle): sqlite3_column_type(handle, column) == SQLITE_INTEGER
        case .postgres(let statement): statement.isInteger(column) && !statement.isNull(column)
        }
    }

    package func isNull(_ column: Int32) -> Bool {
        switch handle {
        case .sqlite(let handle): sqlite3_column_type(handle, column) == SQLITE_NULL
        case .postgres(let statement): statement.isNull(column)
        }
    }

    package func int(_ column: Int32) -> Int64 {
        switch handle {
        case .sqlite(let handle): sqlite3_column_int64(handle, column)
        case .postgres(let statement): statement.int(column)
        }
    }

    package func text(_ column: Int32) -> String? {
        switch handle {
        case .sqlite(let handle):
            guard let text = sqlite3_column_text(handle, column) else { return nil }
            return String(cString: text)
        case .postgres(let statement): return statement.text(column)
        }
    }
}

/// A value a statement binds (NULL is nil), for either backend.
package enum SQLValue: Sendable, Equatable {
    case int(Int64)
    case text(String)
}

/// A Swift value a statement can bind.
package protocol StatementValue {
    var sqlValue: SQLValue { get }
}

extension Int: StatementValue {
    package var sqlValue: SQLValue { .int(Int64(self)) }
}

extension Int64: StatementValue {
    package var sqlValue: SQLValue { .int(self) }
}

extension String: StatementValue {
    package var sqlValue: SQLValue { .text(self) }
}
