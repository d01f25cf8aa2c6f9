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
        #expect(try cost { try db.transaction { try db.savepoint {} } } == [0, 0])
        // BEGIN + INSERT, SAVEPOINT + INSERT, RELEASE + COMMIT.
        #expect(
            try cost {
                try db.transaction {
                    try insert.bind([2]).run()
                    try db.savepoint { try insert.bind([3]).run() }
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
            let duplicate = #expect(throws: StorageError.self) { try db.savepoint { try insert.bind([1]).run() } }
            #expect(duplicate?.sqlState == "23505")
            #expect(throws: Refused.self) {
                try db.savepoint {
                    try insert.bind([2]).run()
                    try db.savepoint { try insert.bind([3]).run() }
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
        var (own, enclosing): (String?, String?) = (nil, nil)
        try db.transaction { () throws -> Void in
            try insert.bind([1]).run()
            // Held in a savepoint: its own error, before it is released.
            own = sqlState { try db.savepoint { () throws -> Void in try insert.bind([1]).runLater() } }
            try db.savepoint { () throws -> Void in try insert.bind([2]).run() }
            // Held before a savepoint opens: the enclosing savepoint's error, not the inner one's.
            enclosing = sqlState {
                try db.savepoint { () throws -> Void in
                    try insert.bind([3]).run()
                    try insert.bind([2]).runLater()
                    try db.savepoint { () throws -> Void in try insert.bind([4]).run() }
                }
            }
            try insert.bind([5]).run()
        }
        #expect(own == "23505" && enclosing == "23505")
        let ids = try db.prepare("SELECT string_agg(id::text, ',' ORDER BY id) FROM t")
        #expect(try ids.step() && ids.text(0) == "1,2,5")
        ids.reset()
        let swallowed = sqlState {
            try db.transaction { () throws -> Void in
                try insert.bind([6]).run()
                try insert.bind([1]).runLater()
                _ = sqlState { try db.savepoint { () throws -> Void in try insert.bind([7]).run() } }
            }
        }
        #expect(swallowed == "25P02")
        #expect(!db.inTransaction)
        #expect(try ids.step() && ids.text(0) == "1,2,5")
    }

    /// A savepoint inside another is released without a round trip of its own: its held writes
    /// go with the next statement awaited, and their failure is the enclosing savepoint's, rolled
    /// back whole by name (`s1`), though the server still has the inner one open. A probe opened
    /// after them (a savepoint whose caller swallows its failure) never takes their failure for
    /// its own: they are sent before it opens, and the savepoint around both fails.
    @Test func anInnerSavepointsWritesGoWithTheNextStatementAndFailInTheOneAroundIt() async throws {
        let traffic = PostgresTraffic()
        let db = try Database(postgresURL: try await PostgresTestServer.freshDatabase(), traffic: traffic)
        try db.execute("CREATE TABLE t (id BIGINT PRIMARY KEY)")
        let insert = try db.cached("INSERT INTO t (id) VALUES (?)")
        var (enclosing, probed, probe): (String?, String?, String?) = (nil, nil, nil)
        try db.transaction { () throws -> Void in
            try insert.bind([1]).run()
            let before = traffic.current.roundTrips
            try db.savepoint { () throws -> Void in
                try db.savepoint { () throws -> Void in try insert.bind([2]).runLater() }
                try insert.bind([3]).run()
            }
            #expect(traffic.current.roundTrips - before == 1)  // SAVEPOINTs, 2, RELEASE s2, 3
            enclosing = sqlState {
                try db.savepoint { () throws -> Void in
                    try insert.bind([4]).run()
                    try db.savepoint { () throws -> Void in try insert.bind([1]).runLater() }  // a duplicate
                    try insert.bind([5]).run()
                }
            }
            probed = sqlState {
                try db.savepoint { () throws -> Void in
                    try insert.bind([6]).run()
                    try db.savepoint { () throws -> Void in try insert.bind([1]).runLater() }
                    probe = sqlState { try db.savepoint { () throws -> Void in try insert.bind([7]).run() } }
                    try insert.bind([8]).run()
                }
            }
            try insert.bind([9]).run()
        }
        #expect(enclosing == "23505")
        #expect(probe == "23505" && probed == "25P02")  // the probe's opening failed, and so did its caller
        #expect(!db.inTransaction)
        let ids = try db.prepare("SELECT string_agg(id::text, ',' ORDER BY id) FROM t")
        #expect(try ids.step() && ids.text(0) == "1,2,3,9")
    }

    /// The group commit's last save (``Database/commitFollowsLastSave``) sends its held writes
    /// with the commit: its release costs no round trip, and their failure is the commit's.
    @Test func theLastSavesWritesGoWithTheCommit() async throws {
        let traffic = PostgresTraffic()
        let db = try Database(postgresURL: try await PostgresTestServer.freshDatabase(), traffic: traffic)
        try db.execute("CREATE TABLE t (id BIGINT PRIMARY KEY)")
        let insert = try db.cached("INSERT INTO t (id) VALUES (?)")
        let before = traffic.current.roundTrips
        try db.transaction { () throws -> Void in
            db.commitFollowsLastSave = true
            try db.savepoint { () throws -> Void in
                try insert.bind([1]).run()
                try insert.bind([2]).runLater()
            }
        }
        #expect(traffic.current.roundTrips - before == 2)  // BEGIN, SAVEPOINT, 1; 2, RELEASE, COMMIT
        let failed = #expect(throws: StorageError.self) {
            try db.transaction { () throws -> Void in
                db.commitFollowsLastSave = true
                try db.savepoint { () throws -> Void in
                    try insert.bind([3]).run()
                    try insert.bind([2]).runLater()
                }
            }
        }
        #expect(failed?.sqlState == "23505" && !db.inTransaction)
        let ids = try db.prepare("SELECT string_agg(id::text, ',' ORDER BY id) FROM t")
        #expect(try ids.step() && ids.text(0) == "1,2")
    }

    /// A statement held back whose rows someone reads (``Statement/runLater(answer:)``): they are
    /// handed over once the round trip it went in has succeeded (here the commit's, one round
    /// trip with the write before it); never when that failed, nor when its savepoint or its
    /// transaction was rolled back before it was sent. Elements of an array literal come back as
    /// the bytes they were.
    @Test func anAnsweredStatementIsAnsweredWithItsRoundTrip() async throws {
        let traffic = PostgresTraffic()
        let db = try Database(postgresURL: try await PostgresTestServer.freshDatabase(), traffic: traffic)
        try db.execute("CREATE TABLE t (id BIGINT PRIMARY KEY)")
        let insert = try db.cached("INSERT INTO t (id) VALUES (?)")
        let echo = try db.cached("SELECT e, length(e) FROM unnest(?::text[]) WITH ORDINALITY AS u (e, n) ORDER BY n")
        let texts = ["1000000123", #"b"c"#, #"d\e"#, "{f,g}", "", "ü 🙂"]
        var answered: [[String?]]?
        let before = traffic.current.roundTrips
        try db.transaction { () throws -> Void in
            try insert.bind([1]).runLater()
            try echo.bind([PostgresSQL.arrayLiteral(texts)]).runLater { answered = $0 }
            #expect(answered == nil)  // not sent yet
        }
        #expect(traffic.current.roundTrips - before == 1)  // BEGIN, INSERT, SELECT, COMMIT
        #expect(answered?.map { $0[0] } == texts)
        #expect(answered?.map { $0[1] } == texts.map { String($0.count) })
        // Failed with what it was sent with: never answered.
        answered = nil
        #expect(throws: StorageError.self) {
            try db.transaction { () throws -> Void in
                try insert.bind([1]).runLater()
                try echo.bind([PostgresSQL.arrayLiteral(["x"])]).runLater { answered = $0 }
            }
        }
        #expect(answered == nil && !db.inTransaction)
        // Rolled back unsent, in a savepoint and in the transaction: never answered; the
        // savepoint's rollback leaves the rest of the transaction's answered.
        var kept: [[String?]]?
        try db.transaction { () throws -> Void in
            try echo.bind([PostgresSQL.arrayLiteral(["kept"])]).runLater { kept = $0 }
            struct Undo: Error {}
            _ = try? db.savepoint { () throws -> Void in
                try echo.bind([PostgresSQL.arrayLiteral(["x"])]).runLater { answered = $0 }
                throw Undo()
            }
        }
        #expect(answered == nil && kept?.first?.first == "kept")
        struct Undo: Error {}
        #expect(throws: Undo.self) {
            try db.transaction { () throws -> Void in
                try echo.bind([PostgresSQL.arrayLiteral(["x"])]).runLater { answered = $0 }
                throw Undo()
            }
        }
        #expect(answered == nil)
        // Outside a transaction, now.
        try echo.bind([PostgresSQL.arrayLiteral(["now"])]).runLater { answered = $0 }
        #expect(answered?.first?.first == "now")
    }

    /// A queue's worker ends its reads later (``Database/endsReadsLater``): a read's `COMMIT`
    /// goes with the next request, so a read is one round trip, and the next read still has a
    /// snapshot of its own. A transaction that runs nothing keeps it held, ``Database/sendHeld()``
    /// sends it alone, and a read whose body swallowed a failure fails nothing sent after it.
    @Test func aReadsCommitGoesWithTheNextRequest() async throws {
        let traffic = PostgresTraffic()
        let url = try await PostgresTestServer.freshDatabase()
        let db = try Database(postgresURL: url, traffic: traffic)
        let other = try Database(postgresURL: url)
        try db.execute("CREATE TABLE t (id BIGINT PRIMARY KEY)")
        db.endsReadsLater = true
        let count = try db.cached("SELECT count(*) FROM t")
        func read() throws -> Int64 {
            try db.readTransaction {
                defer { count.reset() }
                return try count.step() ? count.int(0) : -1
            }
        }
        func cost(_ body: () throws -> Void) rethrows -> [Int] {
            let before = traffic.current
            try body()
            let after = traffic.current
            return [after.statements - before.statements, after.roundTrips - before.roundTrips]
        }
        var counted: [Int64] = []
        #expect(try cost { counted.append(try read()) } == [2, 1])  // BEGIN, SELECT
        #expect(!db.inTransaction)
        try other.execute("INSERT INTO t VALUES (1)")
        #expect(try cost { counted.append(try read()) } == [3, 1])  // the last read's COMMIT, BEGIN, SELECT
        #expect(counted == [0, 1])
        #expect(try cost { try db.transaction {} } == [0, 0])
        let insert = try db.cached("INSERT INTO t VALUES (?)")
        #expect(try cost { try db.transaction { try insert.bind([2]).run() } } == [4, 2])  // COMMIT, BEGIN, INSERT; COMMIT
        _ = try read()
        #expect(try cost { try db.sendHeld() } == [1, 1])
        #expect(try cost { try db.sendHeld() } == [0, 0])
        let divide = try db.cached("SELECT 1 / CAST(? AS BIGINT)")
        let swallowed = try db.readTransaction { () -> Bool in (try? divide.bind([0]).step()) == nil }
        #expect(swallowed)
        #expect(try read() == 2)
        try other.execute("INSERT INTO t VALUES (3)")
        #expect(try read() == 3)
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

/// The SQLSTATE of what `body` threw (its description when it was no server's error); nil when it
/// threw nothing.
private func sqlState(_ body: () throws -> Void) -> String? {
    do {
        try body()
        return nil
    } catch {
        return (error as? StorageError)?.sqlState ?? "\(error)"
    }
}
