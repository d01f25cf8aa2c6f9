import CSQLite
import Foundation
import ReceiptTesting
import Storage
import Testing

@testable import DatabaseEngine

/// SQLite's own settings: WAL, foreign keys, the busy timeout, in-memory journals and the shim VFS.
@Suite("SQLiteConnection")
struct SQLiteConnectionTests {
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
        #expect(SQLiteConnection.configure == 0)
        #expect(SQLiteConnection.statementJournalInMemory == 4 << 20)
        // Spilled journals are written through the shim VFS (CSQLite/shim.h), now the default.
        #expect(String(cString: sqlite3_vfs_find(nil)!.pointee.zName) == "receiptd-piecewise")
    }

    @Test func aStatementWhoseJournalOutgrowsMemorySpillsAndCommits() async throws {
        try await withScratchDirectory("receiptd-spill") { dir in
            let queue = try DatabaseQueue(path: dir + "/db.sqlite", readers: 0)
            // Twice the bound of rows, each on pages of its own: deleting them all (zeroed, with
            // secure_delete) journals every page, so the journal spills to a file part way.
            let rows = 2 * Int(SQLiteConnection.statementJournalInMemory) / 4_000
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
}
