/// A compiled statement on a ``Database``: its connection's (``SQLiteStatement`` or
/// ``PostgresStatement``), kept with what keeps it valid. Parameters are 1-based as in SQLite;
/// columns are 0-based.
package final class Statement {
    /// The connection's statement (for a pipeline too: ``Connection/prefetch(_:)``).
    let compiled: any CompiledStatement
    /// A statement the database caches does not keep the database alive (the database holds the
    /// statement: a strong reference back kept every database that had cached one open until the
    /// process ended); one handed out by ``Database/prepare(_:)`` keeps it alive as long as it
    /// lives, as a caller may drop the database first.
    private let keptOpen: Database?

    init(_ compiled: any CompiledStatement, database: Database, keepingItOpen: Bool) {
        self.compiled = compiled
        keptOpen = keepingItOpen ? database : nil
    }

    /// Binds values to parameters 1...n in order; nil binds NULL.
    @discardableResult
    package func bind(_ values: [(any StatementValue)?]) throws(StorageError) -> Statement {
        try compiled.bind(values)
        return self
    }

    /// Back to the start, ending the read it had begun (bindings stay).
    package func reset() { compiled.reset() }

    /// Advances to the next row; false when done.
    package func step() throws(StorageError) -> Bool { try compiled.step() }

    /// Runs the statement to completion, discarding rows.
    package func run() throws(StorageError) { try compiled.run() }

    /// ``run()``, but on PostgreSQL, in a transaction, sent with the next statement whose answer
    /// is awaited (or the release of its savepoint, or the commit), in one round trip: for a write
    /// whose answer nobody reads (rows changed included). Its error is thrown there, so at the
    /// latest by the savepoint or transaction it is part of, never by another's (a group
    /// commit's next save). On SQLite, in-process, it is ``run()``.
    package func runLater() throws(StorageError) { try compiled.runLater() }

    /// ``runLater()`` for a statement whose rows someone reads: on PostgreSQL they come back with
    /// that round trip, and `answer` is handed them (each row its columns' text, nil for NULL)
    /// once it has succeeded, before the call that sent it returns (a savepoint's release, the
    /// commit), on the database's thread; never when it fails or is rolled back. On SQLite, now.
    /// For a write whose outcome its caller needs only after the commit (a whole save's).
    package func runLater(answer: @escaping ([[String?]]) -> Void) throws(StorageError) {
        guard let postgres = compiled as? PostgresStatement else {
            var rows: [[String?]] = []
            while try step() { rows.append((0..<columnCount).map { text($0) }) }
            return answer(rows)
        }
        try postgres.runLater(answer: answer)
    }

    /// How many columns the current row has (after a step that gave one).
    package var columnCount: Int32 { compiled.columnCount }

    /// A column's name, as the SQL names it.
    package func columnName(_ column: Int32) -> String { compiled.columnName(column) }

    /// Whether the current row's value in `column` is an integer (else text, or NULL).
    package func isInteger(_ column: Int32) -> Bool { compiled.isInteger(column) }

    package func isNull(_ column: Int32) -> Bool { compiled.isNull(column) }

    package func int(_ column: Int32) -> Int64 { compiled.int(column) }

    package func text(_ column: Int32) -> String? { compiled.text(column) }

    /// A text column's UTF-8 bytes as stored (no `String` made between); nil for NULL.
    package func bytes(_ column: Int32) -> [UInt8]? { compiled.bytes(column) }
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
