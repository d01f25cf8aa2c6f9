import Foundation
import ReceiptTesting
import Testing

@testable import DatabaseEngine
@testable import Storage

/// The calls and SQL both connections share, on SQLite and on PostgreSQL (SQLite's own settings:
/// SQLiteConnectionTests).
@Suite("Database")
struct DatabaseTests {
    @Test func transactionRollsBackOnError() throws {
        let db = try Database(path: ":memory:")
        try db.execute("CREATE TABLE t (x INTEGER)")
        struct Boom: Error {}
        #expect(throws: Boom.self) {
            try db.transaction {
                try db.execute("INSERT INTO t VALUES (1)")
                throw Boom()
            }
        }
        #expect(try db.scalarInt("SELECT count(*) FROM t") == 0)
    }

    @Test func queueRunsOffThePool() async throws {
        let queue = try DatabaseQueue(path: ":memory:")
        let value = try await queue.run { db in try db.scalarInt("SELECT 40 + 2") }
        #expect(value == 42)
    }

    @Test func aDatabaseWithCachedStatementsClosesWhenDropped() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/x.sqlite"
        /// This process's descriptors open on the database file.
        func opened() throws -> Int {
            try FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").filter {
                (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + $0)) == path
            }.count
        }
        var db: Database? = try Database(path: path)
        _ = try db?.cached("SELECT 1").step()
        #expect(try opened() == 1)
        db = nil
        #expect(try opened() == 0)
    }

    @Test(arguments: await testDialects())
    func theSameSQLReadsAndWritesAlike(dialect: Database.Dialect) async throws {
        let db = try await emptyDatabase(dialect)
        #expect(db.dialect == dialect)
        try db.execute("CREATE TABLE t (id BIGINT PRIMARY KEY, name TEXT NOT NULL, note TEXT)")
        let insert = try db.cached("INSERT INTO t (id, name, note) VALUES (?1, ?2, ?3) ON CONFLICT DO NOTHING RETURNING id")
        #expect(try insert.bind([1, "one", nil]).step() && insert.int(0) == 1)
        insert.reset()
        #expect(try !insert.bind([1, "again", nil]).step())  // the conflict inserts nothing, returns nothing
        insert.reset()
        try db.cached("UPDATE t SET note = ? WHERE id = ?").bind(["n", 1]).run()
        #expect(db.changes == 1)
        #expect(try db.scalarText("SELECT name || note FROM t") == "onen")
        #expect(try db.scalarInt("SELECT count(*) FROM t WHERE note IS NULL") == 0)
        // A comparison reads as 1 or 0; a statement stepped past its last row runs again.
        let flags = try db.cached("SELECT note IS NOT NULL, note IS NULL FROM t")
        for _ in 0..<2 {
            #expect(try flags.step() && flags.int(0) == 1 && flags.int(1) == 0)
            #expect(try !flags.step())
        }
    }

    /// A statement run later whose rows someone reads (``Statement/runLater(answer:)``) has them
    /// by the time its transaction has committed, as text (NULL: nil), on either database
    /// (SQLite at once, PostgreSQL with the commit: PostgresConnectionTests).
    @Test(arguments: await testDialects())
    func anAnsweredStatementIsAnsweredByItsCommit(dialect: Database.Dialect) async throws {
        let db = try await emptyDatabase(dialect)
        try db.execute("CREATE TABLE t (id BIGINT PRIMARY KEY, note TEXT)")
        var answered: [[String?]]?
        try db.transaction { () throws -> Void in
            try db.cached("INSERT INTO t (id, note) VALUES (?, ?), (?, ?)").bind([1, "one", 2, nil]).runLater()
            try db.cached("SELECT id, note FROM t ORDER BY id").bind([]).runLater { answered = $0 }
        }
        #expect(answered == [["1", "one"], ["2", nil]])
    }

    /// A transaction that throws leaves nothing. One nested in it is part of it: when it throws
    /// and a caller goes on, the transaction fails as a whole (what the nested one wrote is undone
    /// only with it), while a savepoint that throws is undone alone and its caller goes on.
    @Test(arguments: await testDialects())
    func aThrowingTransactionLeavesNothingANestedOneFailsItAndASavepointAlone(dialect: Database.Dialect) async throws {
        let db = try await emptyDatabase(dialect)
        try db.execute("CREATE TABLE t (id BIGINT PRIMARY KEY)")
        let insert = try db.cached("INSERT INTO t (id) VALUES (?)")
        struct Undo: Error {}
        try? db.transaction {
            try insert.bind([1]).run()
            throw Undo()
        }
        #expect(!db.inTransaction)
        try db.transaction {
            try insert.bind([2]).run()
            try? db.savepoint {
                try insert.bind([3]).run()
                throw Undo()
            }
        }
        let partFailed = #expect(throws: StorageError.self) {
            try db.transaction {
                try insert.bind([4]).run()
                try? db.transaction {
                    try insert.bind([5]).run()
                    throw Undo()
                }
                try insert.bind([6]).run()
            }
        }
        #expect(partFailed?.code == .rolledBack && !db.inTransaction)
        // Inside a savepoint, the savepoint fails as a whole, and the transaction goes on.
        try db.transaction {
            try insert.bind([7]).run()
            let inner = #expect(throws: StorageError.self) {
                try db.savepoint {
                    try insert.bind([8]).run()
                    try? db.transaction { () throws -> Void in
                        try insert.bind([9]).run()
                        try db.transaction { () throws -> Void in throw Undo() }
                    }
                }
            }
            #expect(inner?.code == .rolledBack)
        }
        let ids = try db.readTransaction { try db.scalarInt("SELECT sum(id * id) FROM t") }
        #expect(ids.map(Int.init) == 53)  // 2 and 7
    }

    @Test(arguments: await testDialects())
    func aDurableTransactionIsOnDiskWhenItReturnsAndTheNextIsNot(dialect: Database.Dialect) async throws {
        let db = try await emptyDatabase(dialect)
        // SQLite: synchronous FULL (2) for the durable one, NORMAL (1) before and after; PostgreSQL:
        // synchronous_commit on for the durable one (SET LOCAL), the server's own setting after.
        let setting = dialect == .sqlite ? "PRAGMA synchronous" : "SHOW synchronous_commit"
        try db.execute(dialect == .sqlite ? "PRAGMA synchronous = NORMAL" : "SET synchronous_commit = off")
        let before = try db.scalarText(setting)
        let during = try db.transaction(durable: true) { try db.scalarText(setting) }
        #expect(during == (dialect == .sqlite ? "2" : "on"))
        #expect(try db.scalarText(setting) == before)
        #expect(before == (dialect == .sqlite ? "1" : "off"))
        // A durable transaction that throws sets it back as well.
        struct Undo: Error {}
        try? db.transaction(durable: true) { throw Undo() }
        #expect(try db.scalarText(setting) == before)
        #expect(try db.transaction { try db.scalarText(setting) } == before)
    }
    /// Writes run together say each one's changed rows, as ``Database/changes`` would have one at a
    /// time; on PostgreSQL in one round trip, the same statement twice included.
    @Test(arguments: await testDialects())
    func writesRunTogetherCountEachOnesRows(dialect: Database.Dialect) async throws {
        let traffic = PostgresTraffic()
        let db =
            dialect == .sqlite
            ? try await emptyDatabase(dialect)
            : try Database(postgresURL: try await PostgresTestServer.freshDatabase(), traffic: traffic)
        try db.execute("CREATE TABLE t (id BIGINT PRIMARY KEY, note TEXT)")
        try db.cached("INSERT INTO t (id, note) VALUES (?, ?)").bind([1, "a"]).run()
        let upsert = """
            INSERT INTO t (id, note) VALUES (?, ?) ON CONFLICT (id) DO UPDATE SET note = excluded.note
            WHERE t.note IS DISTINCT FROM excluded.note
            """
        let counts = try db.transaction {
            let before = traffic.current.roundTrips
            let counts = try db.runTogether([
                (upsert, [1, "a"]), (upsert, [2, "b"]), ("UPDATE t SET note = 'c'", []), (upsert, [1, "c"]),
            ])
            #expect(dialect == .sqlite || traffic.current.roundTrips - before == 1)
            return counts
        }
        #expect(counts == [0, 1, 2, 0])
        #expect(try db.runTogether([]) == [])
        #expect(throws: StorageError.self) { try db.runTogether([("INSERT INTO t (id) VALUES (?)", [2])]) }
    }

    /// One connection of all leads a key, until it closes: then the next to ask does. SQLite's
    /// one process always leads.
    @Test(arguments: await testDialects())
    func oneConnectionLeadsAKeyUntilItCloses(dialect: Database.Dialect) async throws {
        guard dialect == .postgresql else {
            #expect(try Database(path: ":memory:").lead("work"))
            return
        }
        let url = try await PostgresTestServer.freshDatabase()
        var first: Database? = try Database(postgresURL: url)
        let second = try Database(postgresURL: url)
        #expect(try first?.lead("work") == true)
        #expect(try first?.lead("work") == true)  // still, without asking the server again
        #expect(try second.lead("work") == false)
        #expect(try second.lead("other work"))  // another key is another lead
        first = nil  // its connection closes, and its lead with it
        #expect(try await eventually { try second.lead("work") })
    }
}
