import CSQLite
import FoundationEssentials

/// One SQLite connection, the embedded default: the only owner of its `sqlite3*`, closed in
/// `deinit`. Opened in WAL mode with a busy timeout, foreign keys on and `synchronous=NORMAL`
/// (durable across process crashes; WAL keeps commits atomic, see sqlite.org/wal.html).
final class SQLiteConnection: Connection {
    private let handle: OpaquePointer
    /// Transaction-control statements, compiled once (every read and save runs a few).
    private var controls: [String: SQLiteStatement] = [:]
    /// Whether the open transaction commits with `synchronous = FULL` (set back when it ends).
    private var durable = false

    /// Opens (creating if needed) the database at `path`; `:memory:` for a private in-memory one.
    /// `readOnly` opens an existing file for reading only: it never creates, migrates or writes,
    /// and reads the WAL beside the writer without waiting for it.
    init(path: String, busyTimeout: Duration, readOnly: Bool) throws(StorageError) {
        if path != ":memory:" && !readOnly {
            let directory = path.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/")
            if !directory.isEmpty {
                try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            }
        }
        var db: OpaquePointer?
        let flags =
            readOnly
            ? SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX
        _ = Self.configure
        let rc = sqlite3_open_v2(path, &db, flags, nil)
        guard rc == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            if let db { sqlite3_close_v2(db) }
            throw StorageError(.open, "cannot open database at \(path): \(message)", sqliteCode: rc)
        }
        handle = db
        sqlite3_extended_result_codes(db, 1)
        let ms = busyTimeout.components.seconds * 1000 + busyTimeout.components.attoseconds / 1_000_000_000_000_000
        sqlite3_busy_timeout(db, Int32(clamping: ms))
        guard !readOnly else { return }  // WAL is a property of the file, set by the writer
        try execute("PRAGMA foreign_keys = ON")
        if path != ":memory:" {
            let mode = try scalarText("PRAGMA journal_mode = WAL")
            guard mode?.lowercased() == "wal" else {
                throw StorageError(.open, "cannot enable WAL on \(path) (journal_mode is \(mode ?? "unknown"))")
            }
        }
        try execute("PRAGMA synchronous = NORMAL")
        // What is deleted or rewritten is overwritten with zeros, freed pages included, so no old
        // version of a row (an erased person's above all) lingers in free space. Debian's build
        // has it on already; said here so no other build can differ.
        try execute("PRAGMA secure_delete = ON")
    }

    deinit {
        controls = [:]  // finalized before the connection closes
        sqlite3_close_v2(handle)
    }

    /// How much of a savepoint's or a statement's journal (the pages' contents before it, kept to
    /// roll it back alone) stays in memory, set once per process before the first connection;
    /// SQLite's default is 64 KiB, past which it goes to a temporary file. Each save of a group
    /// commit runs in a savepoint, and those journals' writes to temporary files were two thirds
    /// of the bytes a POST wrote (`strace` at 200,000 subscribers). Bounded: a migration's
    /// statement over a large table still spills, through the shim VFS of CSQLite/shim.h (SQLite
    /// 3.40's unix VFS cannot write a spilled journal of this size in one piece, and said
    /// "database or disk is full"). Nothing durable lives there (the WAL is).
    static let statementJournalInMemory: Int32 = 4 << 20
    /// SQLite's answer to that setting and to the shim VFS's registration (SQLITE_OK, or
    /// SQLITE_MISUSE had anything initialized SQLite before the first connection).
    static let configure: Int32 = receiptd_sqlite3_configure(statementJournalInMemory)

    /// The SQLite library's version, e.g. `3.40.1`.
    static var version: String { String(cString: sqlite3_libversion()) }

    var dialect: Database.Dialect { .sqlite }
    var isConnected: Bool { true }
    var serverProcessID: Int32 { 0 }
    var inTransaction: Bool { sqlite3_get_autocommit(handle) == 0 }
    var changes: Int { Int(sqlite3_changes(handle)) }
    var totalChanges: Int64 { sqlite3_total_changes64(handle) }

    func execute(_ sql: String) throws(StorageError) {
        var error: UnsafeMutablePointer<CChar>?
        let rc = sqlite3_exec(handle, sql, nil, nil, &error)
        if rc != SQLITE_OK {
            let message = error.map { String(cString: $0) } ?? String(cString: sqlite3_errmsg(handle))
            sqlite3_free(error)
            throw StorageError(.sqlite, message, sqliteCode: rc)
        }
    }

    func compile(_ sql: String) throws(StorageError) -> any CompiledStatement { try statement(sql) }

    private func statement(_ sql: String) throws(StorageError) -> SQLiteStatement {
        var statement: OpaquePointer?
        let rc = sqlite3_prepare_v2(handle, sql, -1, &statement, nil)
        guard rc == SQLITE_OK, let statement else {
            throw StorageError(.sqlite, String(cString: sqlite3_errmsg(handle)), sqliteCode: rc)
        }
        return SQLiteStatement(statement)
    }

    private func control(_ sql: String) throws(StorageError) {
        if let statement = controls[sql] { return try statement.run() }
        let statement = try statement(sql)
        controls[sql] = statement
        try statement.run()
    }

    private func scalarText(_ sql: String) throws(StorageError) -> String? {
        let statement = try statement(sql)
        return try statement.step() ? statement.text(0) : nil
    }

    // MARK: Transactions

    func beginReading() throws(StorageError) { try control("BEGIN DEFERRED") }

    /// `BEGIN IMMEDIATE`: the write lock at once, so a transaction that reads first never fails
    /// to upgrade. A `durable` one commits with `synchronous = FULL` (settable only outside a
    /// transaction, so set before it and back after it).
    func beginWriting(durable: Bool) throws(StorageError) {
        if durable {
            try execute("PRAGMA synchronous = FULL")
            self.durable = true
        }
        do throws(StorageError) {
            try control("BEGIN IMMEDIATE")
        } catch {
            endDurable()
            throw error
        }
    }

    func commit() throws(StorageError) {
        try control("COMMIT")
        endDurable()
    }

    func rollback() throws(StorageError) {
        defer { endDurable() }
        try execute("ROLLBACK")
    }

    private func endDurable() {
        guard durable, !inTransaction else { return }
        durable = false
        try? execute("PRAGMA synchronous = NORMAL")
    }

    func endReading(later: Bool) throws(StorageError) { try commit() }
    func sendHeld() throws(StorageError) {}

    func savepoint() throws(StorageError) { try control("SAVEPOINT nested") }
    func releaseSavepoint(commitFollows: Bool) throws(StorageError) { try control("RELEASE nested") }
    func rollbackToSavepoint() throws(StorageError) { try execute("ROLLBACK TO nested; RELEASE nested") }

    func setLocal(_ name: String, _ value: String) throws(StorageError) {}
    func prefetch(_ statements: [Statement]) throws(StorageError) {}

    // MARK: What only SQLite has

    /// Changes whenever *another* connection, in this process or any other, commits to the file
    /// (sqlite.org/pragma.html#pragma_data_version); never for this connection's own commits.
    func dataVersion() throws(StorageError) -> Int64 {
        let statement = try statement("PRAGMA data_version")
        return try statement.step() ? statement.int(0) : 0
    }

    /// Moves every committed page from the WAL into the file and empties the WAL
    /// (`wal_checkpoint(TRUNCATE)`, waiting up to the busy timeout for readers of older
    /// snapshots; throws if one outlasts it).
    func checkpointAndEmptyWAL() throws(StorageError) {
        // (busy, WAL frames, frames checkpointed): busy 0 is a whole checkpoint and an empty WAL.
        // A busy one has waited for the readers as long as the busy timeout.
        let q = try statement("PRAGMA wal_checkpoint(TRUNCATE)")
        guard try q.step(), q.int(0) != 0 else { return }
        throw StorageError(.sqlite, "the WAL could not be emptied after an erasure: a reader held an older snapshot")
    }

    /// Copies the whole database to a new file at `path`, online, with SQLite's backup API
    /// (sqlite.org/backup.html), `pagesPerStep` at a time (-1: all in one step). Returns the pages
    /// copied.
    func backup(to path: String, pagesPerStep: Int32) throws(StorageError) -> Int {
        var target: OpaquePointer?
        let rc = sqlite3_open_v2(path, &target, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nil)
        guard rc == SQLITE_OK, let target else {
            if let target { sqlite3_close_v2(target) }
            throw StorageError(.open, "cannot create \(path)", sqliteCode: rc)
        }
        defer { sqlite3_close_v2(target) }
        guard let backup = sqlite3_backup_init(target, "main", handle, "main") else {
            throw StorageError(.sqlite, String(cString: sqlite3_errmsg(target)), sqliteCode: sqlite3_errcode(target))
        }
        var step = SQLITE_OK
        repeat {
            step = sqlite3_backup_step(backup, pagesPerStep)
            if step == SQLITE_BUSY || step == SQLITE_LOCKED { sqlite3_sleep(10) }
        } while step == SQLITE_OK || step == SQLITE_BUSY || step == SQLITE_LOCKED
        let pages = Int(sqlite3_backup_pagecount(backup))
        let finished = sqlite3_backup_finish(backup)
        guard step == SQLITE_DONE, finished == SQLITE_OK else {
            try? FileManager.default.removeItem(atPath: path)
            throw StorageError(.sqlite, "backup failed: \(String(cString: sqlite3_errstr(step)))", sqliteCode: step)
        }
        return pages
    }
}
