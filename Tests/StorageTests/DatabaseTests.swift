import Foundation
import ReceiptTesting
import Storage
import Testing

/// The connection: SQLite's own settings, and the calls and SQL both backends share, on SQLite
/// and on PostgreSQL.
@Suite("Database")
struct DatabaseTests {
    @Test func opensFilesInWALModeWithForeignKeys() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let db = try Database(path: dir + "/nested/x.sqlite")
        #expect(try db.scalarText("PRAGMA journal_mode") == "wal")
        #expect(try db.scalarInt("PRAGMA foreign_keys") == 1)
        #expect(try db.scalarInt("PRAGMA busy_timeout") == 5000)
    }

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
    }

    @Test(arguments: await testDialects())
    func aThrowingTransactionLeavesNothingAndANestedOneIsASavepoint(dialect: Database.Dialect) async throws {
        let db = try await emptyDatabase(dialect)
        try db.execute("CREATE TABLE t (id BIGINT PRIMARY KEY)")
        struct Undo: Error {}
        try? db.transaction {
            try db.cached("INSERT INTO t (id) VALUES (?)").bind([1]).run()
            throw Undo()
        }
        #expect(!db.inTransaction)
        try db.transaction {
            try db.cached("INSERT INTO t (id) VALUES (?)").bind([2]).run()
            try? db.transaction {
                try db.cached("INSERT INTO t (id) VALUES (?)").bind([3]).run()
                throw Undo()
            }
        }
        let ids = try db.readTransaction { try db.scalarInt("SELECT sum(id) FROM t") }
        #expect(ids == 2)
    }
}
