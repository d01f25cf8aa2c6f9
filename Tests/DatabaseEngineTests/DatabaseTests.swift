import CSQLite
import Foundation
import ReceiptTesting
import Testing

@testable import DatabaseEngine
@testable import Storage

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

    @Test func savepointJournalsStayInMemoryUpToTheirBound() throws {
        _ = try Database(path: ":memory:")
        // Set before SQLite initialized (SQLITE_OK), not refused as too late (SQLITE_MISUSE).
        #expect(Database.configureSQLite == 0)
        #expect(Database.statementJournalInMemory == 4 << 20)
        // Spilled journals are written through the shim VFS (CSQLite/shim.h), now the default.
        #expect(String(cString: sqlite3_vfs_find(nil)!.pointee.zName) == "receiptd-piecewise")
    }

    @Test func aStatementWhoseJournalOutgrowsMemorySpillsAndCommits() async throws {
        try await withScratchDirectory("receiptd-spill") { dir in
            let queue = try DatabaseQueue(path: dir + "/db.sqlite", readers: 0)
            // Twice the bound of rows, each on pages of its own: deleting them all (zeroed, with
            // secure_delete) journals every page, so the journal spills to a file part way.
            let rows = 2 * Int(Database.statementJournalInMemory) / 4_000
            try await queue.run { db in
                try db.execute("CREATE TABLE big (x TEXT)")
                try db.transaction {
                    for _ in 0..<rows {
                        try db.cached("INSERT INTO big VALUES (?)").bind([String(repeating: "x", count: 4_000)]).run()
                    }
                }
            }
            // In a transaction of its own, and in a save's savepoint of a group commit.
            try await queue.write(alone: true) { db in try db.execute("DELETE FROM big WHERE rowid % 2 = 0") }
            try await queue.write { db in try db.execute("DELETE FROM big") }
            #expect(try await queue.read { db in try db.scalarInt("SELECT count(*) FROM big") } == 0)
        }
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
