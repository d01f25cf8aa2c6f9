/// One connection to a database, as ``Database`` drives it: SQLite's (``SQLiteConnection``, the
/// embedded default) or PostgreSQL's (``PostgresConnection``). ``Database`` keeps what is the same
/// for both (the statement cache, transactions and their timing, advisory locks, the change log's
/// notes); a connection does what differs, so nothing above it asks which one it is but for SQL
/// text (``Database/dialect``).
///
/// Not `Sendable`: used from one thread at a time, like ``Database``.
protocol Connection: AnyObject {
    /// The SQL dialect it speaks.
    var dialect: Database.Dialect { get }
    /// Whether it can still answer (a PostgreSQL server that went away: no; SQLite: always).
    var isConnected: Bool { get }
    /// The server process serving it, as a PostgreSQL notification names its sender (0 on SQLite).
    var serverProcessID: Int32 { get }
    /// Whether a transaction is open (begun, even if not yet sent to the server).
    var inTransaction: Bool { get }
    /// Rows the last INSERT, UPDATE or DELETE changed.
    var changes: Int { get }
    /// Rows every statement on this connection inserted, updated or deleted since it opened.
    var totalChanges: Int64 { get }

    /// Runs one or more statements that take no parameters and return no rows.
    func execute(_ sql: String) throws(StorageError)
    /// Compiles `sql`, written with `?` parameters. PostgreSQL prepares it once per connection and
    /// answers the same statement every time; SQLite compiles a new one.
    func compile(_ sql: String) throws(StorageError) -> any CompiledStatement

    /// Begins a read transaction: every query in it sees one committed snapshot.
    func beginReading() throws(StorageError)
    /// Begins a write transaction; `durable`: its commit is on disk when it returns.
    func beginWriting(durable: Bool) throws(StorageError)
    func commit() throws(StorageError)
    /// Ends a read transaction. `later`: on PostgreSQL, its `COMMIT` is held back and sent with
    /// the next request (``sendHeld()`` sends it alone); SQLite ends it now.
    func endReading(later: Bool) throws(StorageError)
    /// Sends what is held back for the next request, alone (PostgreSQL; nothing on SQLite).
    func sendHeld() throws(StorageError)
    func rollback() throws(StorageError)
    /// Opens a savepoint inside the transaction (the innermost is the one the next two end).
    func savepoint() throws(StorageError)
    /// Releases the innermost savepoint. `commitFollows`: nothing but the commit comes after the
    /// outermost savepoint open (PostgreSQL then sends its writes with the commit).
    func releaseSavepoint(commitFollows: Bool) throws(StorageError)
    /// Rolls back to the innermost savepoint and releases it.
    func rollbackToSavepoint() throws(StorageError)

    /// Sets server setting `name` to `value` until the transaction ends (PostgreSQL's `SET LOCAL`;
    /// nothing on SQLite, which has no such settings).
    func setLocal(_ name: String, _ value: String) throws(StorageError)
    /// Runs the bound `statements` now, together (PostgreSQL: one round trip); each then steps
    /// through its rows as if its first step had run it. Nothing on SQLite (each runs in-process
    /// at its first step).
    func prefetch(_ statements: [Statement]) throws(StorageError)
}

/// A compiled statement on a ``Connection``, which ``Statement`` wraps: bind, then step through
/// the rows or run it. Parameters are 1-based; columns are 0-based.
protocol CompiledStatement: AnyObject {
    /// Binds values to parameters 1...n in order (nil binds NULL), ending any read begun.
    func bind(_ values: [(any StatementValue)?]) throws(StorageError)
    /// Back to the start, ending the read it had begun (bindings stay).
    func reset()
    /// Advances to the next row; false when done.
    func step() throws(StorageError) -> Bool
    /// Runs it to completion, discarding rows.
    func run() throws(StorageError)
    /// ``run()``, but on PostgreSQL in a transaction sent with the next statement whose answer is
    /// awaited (see ``Statement/runLater()``).
    func runLater() throws(StorageError)
    /// How many columns the current row has.
    var columnCount: Int32 { get }
    func columnName(_ column: Int32) -> String
    /// Whether the current row's value in `column` is an integer (NULL is not).
    func isInteger(_ column: Int32) -> Bool
    func isNull(_ column: Int32) -> Bool
    func int(_ column: Int32) -> Int64
    func text(_ column: Int32) -> String?
    /// A text column's UTF-8 bytes as stored, without a `String` between (a kept document).
    func bytes(_ column: Int32) -> [UInt8]?
}
