/// A PostgreSQL connection as ``Database`` drives it. Transaction control is held back and sent
/// with the next statement, in one round trip (``PostgresConnection/begin(_:)``).
extension PostgresConnection: Connection {
    var dialect: Database.Dialect { .postgresql }
    var serverProcessID: Int32 { backendPID }

    func compile(_ sql: String) throws(StorageError) -> any CompiledStatement { try cached(sql) }

    /// `REPEATABLE READ, READ ONLY`: one snapshot for every query in it.
    func beginReading() throws(StorageError) { begin("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY") }

    /// A plain `BEGIN` (READ COMMITTED): reads take no locks, so a save that reads and then writes
    /// guards the write itself. A commit is as durable as the server's `synchronous_commit` says
    /// (on, its default: on disk); a `durable` one is on disk whatever it says.
    func beginWriting(durable: Bool) throws(StorageError) {
        begin("BEGIN")
        if durable { hold("SET LOCAL synchronous_commit = on") }
    }

    /// `SET LOCAL`, sent with the next statement.
    func setLocal(_ name: String, _ value: String) throws(StorageError) {
        guard inTransaction, name.allSatisfy({ $0.isLetter || $0 == "_" }), !value.contains("'") else {
            throw StorageError(.postgres, "SET LOCAL \(name) needs a transaction, a plain name and a value")
        }
        hold("SET LOCAL \(name) = '\(value)'")
    }

    /// In one round trip, with what is held back.
    func prefetch(_ statements: [Statement]) throws(StorageError) {
        let postgres = statements.compactMap { $0.compiled as? PostgresStatement }
        let results = try runAll(postgres.map(\.request))
        for (statement, result) in zip(postgres, results) { statement.adopt(result) }
    }
}
