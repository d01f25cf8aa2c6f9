extension Database {
    /// A failure the database itself reported, told as SQLite's or PostgreSQL's.
    package func failure(_ message: String) -> StorageError {
        StorageError(dialect == .sqlite ? .sqlite : .postgres, message)
    }

    /// The clause a claim's `SELECT` ends with so that two claims at once take different rows: on
    /// PostgreSQL ` FOR UPDATE OF <alias> SKIP LOCKED`; SQLite's one writer keeps claims apart
    /// already, so nothing there.
    package func skippingLockedRows(of alias: String) -> String {
        dialect == .postgresql ? " FOR UPDATE OF \(alias) SKIP LOCKED" : ""
    }

    /// The order rows were inserted in: SQLite's `rowid`, or on PostgreSQL the table's own
    /// sequence `column` (SQLite tables keep their rowid; PostgreSQL's have no such column).
    package func insertionOrder(column: String) -> String { dialect == .sqlite ? "rowid" : column }
}
