import ReceiptTesting
import Storage
import Testing

@testable import DatabaseEngine

@Suite("PostgreSQL connection (libpq)", .enabled("PostgreSQL is not installed here") { await PostgresTestServer.isAvailable() })
struct PostgresConnectionTests {
    /// Binds `values` to `statement` and runs it.
    private func run(_ statement: PostgresStatement, _ values: [(any StatementValue)?]) throws {
        try statement.bind(values)
        try statement.run()
    }

    @Test func preparedStatementsBindAndReadIntegersTextAndNull() async throws {
        let db = try PostgresConnection(url: try await PostgresTestServer.freshDatabase())
        try db.execute("CREATE TABLE t (id BIGINT PRIMARY KEY, name TEXT, note TEXT)")
        let insert = try db.cached("INSERT INTO t (id, name, note) VALUES (?, ?, ?)")
        try insert.bind([Int64.max, "ünïcode ' \" ?", nil])
        try insert.run()
        #expect(db.changes == 1)
        try insert.bind([-1, "", "x"])
        try insert.run()
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
        try run(db.cached("UPDATE t SET n = n + 1 WHERE n = ?"), [0])
        #expect(db.changes == 2)
        try run(db.cached("INSERT INTO t VALUES (?, ?) ON CONFLICT DO NOTHING"), [3, 9])
        #expect(db.changes == 0)
        try run(db.cached("UPDATE t SET n = 7 WHERE id = ?"), [3])
        try run(db.cached("SELECT * FROM t"), [])
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

    /// `BEGIN`, `SAVEPOINT` and `RELEASE` go out with the next statement, `COMMIT` with what is
    /// still held: one round trip each for what waits for an answer, none for what ran nothing.
    @Test func transactionControlTravelsWithTheNextStatement() async throws {
        let traffic = PostgresTraffic()
        let db = try Database(postgresURL: try await PostgresTestServer.freshDatabase(), traffic: traffic)
        try db.execute("CREATE TABLE t (id BIGINT PRIMARY KEY)")
        let insert = try db.cached("INSERT INTO t (id) VALUES (?)")
        let count = try db.cached("SELECT count(*) FROM t")
        func cost(_ body: () throws -> Void) rethrows -> [Int] {
            let before = traffic.current
            try body()
            let after = traffic.current
            return [after.statements - before.statements, after.roundTrips - before.roundTrips]
        }
        #expect(try cost { try db.transaction {} } == [0, 0])
        #expect(try cost { try db.readTransaction {} } == [0, 0])
        #expect(try cost { try db.transaction { try insert.bind([1]).run() } } == [3, 2])
        #expect(try cost { try db.transaction { try db.transaction {} } } == [0, 0])
        // BEGIN + INSERT, SAVEPOINT + INSERT, RELEASE + COMMIT.
        #expect(
            try cost {
                try db.transaction {
                    try insert.bind([2]).run()
                    try db.transaction { try insert.bind([3]).run() }
                }
            } == [6, 3])
        var counted: Int64 = 0
        let read = try cost {
            try db.readTransaction {
                try count.bind([])
                if try count.step() { counted = count.int(0) }
                count.reset()
            }
        }
        #expect(read == [3, 2] && counted == 3)
        #expect(!db.inTransaction)
    }

    /// Held-back control changes no outcome: a failing statement rolls back its savepoint alone,
    /// a Swift error thrown after an inner savepoint was released rolls back the outer one whole,
    /// and a failure in the transaction's first statement leaves no transaction behind.
    @Test func heldBackControlKeepsEverySavepointsOutcome() async throws {
        let db = try Database(postgresURL: try await PostgresTestServer.freshDatabase())
        try db.execute("CREATE TABLE t (id BIGINT PRIMARY KEY)")
        let insert = try db.cached("INSERT INTO t (id) VALUES (?)")
        struct Refused: Error {}
        try db.transaction {
            try insert.bind([1]).run()
            let duplicate = #expect(throws: StorageError.self) { try db.transaction { try insert.bind([1]).run() } }
            #expect(duplicate?.sqlState == "23505")
            #expect(throws: Refused.self) {
                try db.transaction {
                    try insert.bind([2]).run()
                    try db.transaction { try insert.bind([3]).run() }
                    throw Refused()
                }
            }
            try insert.bind([4]).run()
        }
        let first = #expect(throws: StorageError.self) { try db.transaction { try insert.bind([4]).run() } }
        #expect(first?.sqlState == "23505")
        #expect(!db.inTransaction)
        let ids = try db.prepare("SELECT string_agg(id::text, ',' ORDER BY id) FROM t")
        #expect(try ids.step() && ids.text(0) == "1,4")
    }

    /// A write held back (``Statement/runLater()``) fails where it was written: in its
    /// savepoint before that is released, or before a savepoint opened after it, so that the
    /// savepoint rolled back is the one that failed and the transaction goes on. And a
    /// transaction whose failure was swallowed is never reported committed: the server answers
    /// its COMMIT with ROLLBACK.
    @Test func heldWritesFailWhereTheyWereWrittenAndAFailedTransactionNeverCommits() async throws {
        let db = try Database(postgresURL: try await PostgresTestServer.freshDatabase())
        try db.execute("CREATE TABLE t (id BIGINT PRIMARY KEY)")
        let insert = try db.cached("INSERT INTO t (id) VALUES (?)")
        /// The SQLSTATE of what `body` threw; nil when it threw nothing.
        func failure(_ body: () throws -> Void) -> String? {
            do {
                try body()
                return nil
            } catch {
                return (error as? StorageError)?.sqlState ?? "\(error)"
            }
        }
        var (own, enclosing): (String?, String?) = (nil, nil)
        try db.transaction { () throws -> Void in
            try insert.bind([1]).run()
            // Held in a savepoint: its own error, before it is released.
            own = failure { try db.transaction { () throws -> Void in try insert.bind([1]).runLater() } }
            try db.transaction { () throws -> Void in try insert.bind([2]).run() }
            // Held before a savepoint opens: the enclosing savepoint's error, not the inner one's.
            enclosing = failure {
                try db.transaction { () throws -> Void in
                    try insert.bind([3]).run()
                    try insert.bind([2]).runLater()
                    try db.transaction { () throws -> Void in try insert.bind([4]).run() }
                }
            }
            try insert.bind([5]).run()
        }
        #expect(own == "23505" && enclosing == "23505")
        let ids = try db.prepare("SELECT string_agg(id::text, ',' ORDER BY id) FROM t")
        #expect(try ids.step() && ids.text(0) == "1,2,5")
        ids.reset()
        let swallowed = failure {
            try db.transaction { () throws -> Void in
                try insert.bind([6]).run()
                try insert.bind([1]).runLater()
                _ = failure { try db.transaction { () throws -> Void in try insert.bind([7]).run() } }
            }
        }
        #expect(swallowed == "25P02")
        #expect(!db.inTransaction)
        #expect(try ids.step() && ids.text(0) == "1,2,5")
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
