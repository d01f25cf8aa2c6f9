import ReceiptTesting
import Storage
import Testing

@Suite("PostgreSQL connection (libpq)", .enabled("PostgreSQL is not installed here") { await PostgresTestServer.isAvailable() })
struct PostgresConnectionTests {
    @Test func preparedStatementsBindAndReadIntegersTextAndNull() async throws {
        let db = try PostgresConnection(url: try await PostgresTestServer.freshDatabase())
        try db.execute("CREATE TABLE t (id BIGINT PRIMARY KEY, name TEXT, note TEXT)")
        let insert = try db.cached("INSERT INTO t (id, name, note) VALUES (?, ?, ?)")
        try insert.bind([Int64.max, "ünïcode ' \" ?", nil]).run()
        #expect(db.changes == 1)
        try insert.bind([-1, "", "x"]).run()
        let select = try db.cached("SELECT id, name, note FROM t ORDER BY id")
        try select.bind([])
        #expect(try select.step())
        #expect(select.int(0) == -1 && select.text(1) == "" && select.text(2) == "x")
        #expect(try select.step())
        #expect(select.int(0) == Int64.max && select.text(1) == "ünïcode ' \" ?")
        #expect(select.isNull(2) && select.text(2) == nil)
        #expect(try !select.step())
        #expect(try db.cached("INSERT INTO t (id, name, note) VALUES (?, ?, ?)") === insert)  // prepared once
    }

    /// Integers are read from libpq's text directly: what `Int64(text) ?? 0` reads, at both ends,
    /// past them, signed, from text that is no integer, and booleans as 1 and 0.
    @Test func integersReadAsTheirTextSays() async throws {
        let db = try PostgresConnection(url: try await PostgresTestServer.freshDatabase())
        let texts = [
            "0", "-0", "7", "+7", "-1", "9223372036854775807", "-9223372036854775808", "9223372036854775808",
            "-9223372036854775809", "99999999999999999999", "00000000000000000000012", "", "-", "+", "1a", " 1", "1.5",
            "١",
        ]
        let select = try db.cached("SELECT ?::text, true, false")
        for text in texts {
            try select.bind([text])
            #expect(try select.step())
            #expect(select.int(0) == Int64(text) ?? 0, "\(text)")
            #expect(select.int(1) == 1 && select.int(2) == 0)
            select.reset()
        }
        let typed = try db.cached("SELECT 9223372036854775807::bigint, (-9223372036854775807 - 1)::bigint, -5::int2")
        try typed.bind([])
        #expect(try typed.step())
        #expect(typed.int(0) == .max && typed.int(1) == .min && typed.int(2) == -5)
    }

    @Test func changesCountsTheRowsAStatementTouched() async throws {
        let db = try PostgresConnection(url: try await PostgresTestServer.freshDatabase())
        try db.execute("CREATE TABLE t (id BIGINT PRIMARY KEY, n BIGINT NOT NULL); INSERT INTO t VALUES (1, 0), (2, 0), (3, 5)")
        try db.cached("UPDATE t SET n = n + 1 WHERE n = ?").bind([0]).run()
        #expect(db.changes == 2)
        try db.cached("INSERT INTO t VALUES (?, ?) ON CONFLICT DO NOTHING").bind([3, 9]).run()
        #expect(db.changes == 0)
        try db.cached("UPDATE t SET n = 7 WHERE id = ?").bind([3]).run()
        try db.cached("SELECT * FROM t").bind([]).run()
        #expect(db.changes == 1)  // as SQLite counts: a SELECT leaves it alone
        #expect(db.totalChanges == 3)
    }

    @Test func aConstraintViolationCarriesItsSQLStateAndTheTransactionRollsBack() async throws {
        // Through Database, whose transactions (and savepoints: DatabaseTests) both backends share.
        let db = try Database(postgresURL: try await PostgresTestServer.freshDatabase())
        try db.execute("CREATE TABLE t (id BIGINT PRIMARY KEY)")
        let insert = try db.cached("INSERT INTO t (id) VALUES (?)")
        #expect(throws: StorageError.self) {
            try db.transaction {
                try insert.bind([1]).run()
                try insert.bind([1]).run()
            }
        }
        try insert.bind([7]).run()
        let duplicate = failure { () throws(StorageError) in try insert.bind([7]).run() }
        #expect(duplicate?.code == .postgres && duplicate?.sqlState == "23505")
        #expect(try db.scalarInt("SELECT count(*) FROM t") == 1)  // the transaction's row is gone, the 7 stays
        #expect(!db.inTransaction)
    }

    @Test func aConnectionFailureNeverRepeatsTheURL() throws {
        let error = failure { () throws(StorageError) in
            _ = try PostgresConnection(url: "postgresql://someone:hunter2-secret@127.0.0.1:1/none?connect_timeout=2")
        }
        #expect(error?.code == .open)
        #expect(error.map { !$0.description.contains("hunter2-secret") } ?? false)
    }
}

/// What `body` threw, or nil when it did not throw.
private func failure(_ body: () throws(StorageError) -> Void) -> StorageError? {
    do {
        try body()
        return nil
    } catch {
        return error
    }
}
