package import CoreMetrics
import FoundationEssentials

/// One database connection, SQLite (the embedded default) or PostgreSQL (``init(postgresURL:)``):
/// the stores speak to either through it and ``Statement``, in SQL both dialects take, and ask
/// ``dialect`` where their SQL differs. What differs beyond the SQL is its ``Connection``'s
/// (``SQLiteConnection`` or ``PostgresConnection``); what is the same for both is here: the
/// statement cache, transactions and their timing, advisory locks, the change log's notes.
///
/// SQL both take: `ON CONFLICT DO NOTHING` and `RETURNING`, not `INSERT OR IGNORE` and
/// `last_insert_rowid()`; `IS DISTINCT FROM`, not `IS NOT`; `CASE WHEN … THEN 1 ELSE 0 END`, not a
/// comparison's value in arithmetic; an upsert's columns named with their table; every subquery
/// in FROM named; no output alias in WHERE or HAVING; no two-argument `max()`. PostgreSQL infers a
/// parameter's type from where it first appears, so one that may be NULL (`? IS NULL`) or stands
/// alone in a CASE is cast there (`CAST(? AS TEXT)`).
///
/// Not `Sendable`: use it from one thread at a time, through ``DatabaseQueue``.
package final class Database {
    /// The SQL dialect the connection speaks.
    package enum Dialect: String, Sendable {
        case sqlite, postgresql
    }

    private let connection: any Connection
    /// The file this connection opened (`postgresql` for a PostgreSQL connection: never its URL).
    package let path: String
    /// Where write transactions are timed: `database_write_duration_seconds{durability, outcome}`,
    /// from `BEGIN IMMEDIATE` to the end of `COMMIT` (or `ROLLBACK`), lock waits included.
    package var metrics: any MetricsFactory = NOOPMetricsHandler.instance
    /// Statements compiled once per connection, by their SQL (``cached(_:)``).
    private var statements: [String: Statement] = [:]
    /// On PostgreSQL, where this connection's process hears of changes (set by ``DatabaseQueue``).
    var changeFeed: ChangeFeed?
    /// On PostgreSQL, ``ChangeFeed/mark`` just before this connection's current transaction began
    /// (0 without a feed): what ``ChangeLog/last()`` answers there.
    private(set) var snapshotMark: Int64 = 0
    /// The subscribers the ``ChangeLog`` was told of in the current transaction (those of a
    /// rolled-back savepoint or transaction dropped), taken by the ``DatabaseQueue`` after the
    /// commit to publish them on the ``ChangeFeed``. Kept on PostgreSQL only.
    private var notedChanges: [String] = []
    /// The ``lock(_:)`` keys the current transaction holds (PostgreSQL), so locking one again costs
    /// no round trip: a store locks what it writes, and so does the use case that calls it.
    private var heldLocks: [[UInt8]] = []
    /// The ``lead(_:)`` keys this connection holds, until it closes.
    private var ledKeys: Set<String> = []

    /// Opens (creating if needed) the SQLite database at `path`; `:memory:` for a private
    /// in-memory one. `readOnly` opens an existing file for reading only: it never creates,
    /// migrates or writes, and reads the WAL beside the writer without waiting for it.
    package init(path: String, busyTimeout: Duration = .seconds(5), readOnly: Bool = false) throws(StorageError) {
        connection = try SQLiteConnection(path: path, busyTimeout: busyTimeout, readOnly: readOnly)
        self.path = path
    }

    /// Attaches the SQLite file at `path` as the schema `name` (`:memory:`: a private one), so
    /// that its tables are named as if they were this file's (``DatabaseQueue``'s
    /// ``AttachedFile``). A read-only connection attaches it read-only.
    package func attach(_ path: String, as name: String) throws(StorageError) {
        try prepare("ATTACH DATABASE ? AS \(name)").bind([path]).run()
    }

    /// Connects to PostgreSQL at `url` (libpq's syntax; the URL, which may hold a password, is never
    /// repeated in an error or kept).
    /// - Parameter traffic: where the connection counts its statements and round trips.
    package init(postgresURL url: String, traffic: PostgresTraffic = PostgresTraffic()) throws(StorageError) {
        connection = try PostgresConnection(url: url, traffic: traffic)
        path = "postgresql"
    }

    deinit {
        statements = [:]  // finalized before the connection closes
    }

    /// Whether the connection to the server is still good (always on SQLite): a PostgreSQL
    /// connection whose server went away answers no more and must be opened again.
    var isConnected: Bool { connection.isConnected }

    /// On PostgreSQL, the server process serving this connection (0 on SQLite).
    var backendPID: Int32 { connection.serverProcessID }

    package var dialect: Dialect { connection.dialect }

    /// The SQLite connection, for what only SQLite has (nil on PostgreSQL).
    private var sqlite: SQLiteConnection? { connection as? SQLiteConnection }

    /// Rows this connection has inserted, updated or deleted since it opened: grows with each of
    /// its own writes (sqlite.org/c3ref/total_changes.html).
    package var totalChanges: Int64 { connection.totalChanges }

    /// Changes whenever *another* connection, in this process or any other, commits to the file
    /// (sqlite.org/pragma.html#pragma_data_version); never for this connection's own commits.
    /// SQLite only: PostgreSQL's connections hear of others' commits another way.
    /// After an ``Erasure`` (SQLite): moves every committed page from the WAL into the file and
    /// empties the WAL (`wal_checkpoint(TRUNCATE)`, waiting up to the busy timeout for readers of
    /// older snapshots; throws if one outlasts it), so the pages as they were before the erasure are no longer in either.
    /// Nothing to do on PostgreSQL (see Docs/privacy.md).
    package func scrubAfterErasure() throws(StorageError) {
        try sqlite?.checkpointAndEmptyWAL()
    }

    package func dataVersion() throws(StorageError) -> Int64 {
        guard let sqlite else { throw StorageError(.postgres, "data_version is SQLite's") }
        return try sqlite.dataVersion()
    }

    /// Runs one or more statements that return no rows.
    package func execute(_ sql: String) throws(StorageError) { try connection.execute(sql) }

    /// Compiles one statement (on PostgreSQL, prepared once per connection and kept, like ``cached(_:)``).
    package func prepare(_ sql: String) throws(StorageError) -> Statement {
        try prepare(sql, keepingItOpen: true)
    }

    private func prepare(_ sql: String, keepingItOpen: Bool) throws(StorageError) -> Statement {
        let compiled = try connection.compile(sql)
        compiled.reset()  // a fresh statement on PostgreSQL too: no result left from its last use
        return Statement(compiled, database: self, keepingItOpen: keepingItOpen)
    }

    /// The statement for `sql`, compiled on first use and kept: for the queries every read runs.
    /// Bind before stepping (binding resets it). Cached statements are reset at the end of each
    /// transaction and of each ``DatabaseQueue`` job, so one read part-way never holds a snapshot.
    package func cached(_ sql: String) throws(StorageError) -> Statement {
        if let statement = statements[sql] { return statement }
        let statement = try prepare(sql, keepingItOpen: false)
        statements[sql] = statement
        return statement
    }

    /// Runs the bound `statements` now: on PostgreSQL, in one round trip (with what is held back),
    /// each then stepping through its rows as if its first step had run it, even when bound again
    /// with the same values first (by the store function that reads it); on SQLite, in-process,
    /// nothing: each runs at its first step. For reads that do not depend on each other. A
    /// statement at most once in `statements`.
    package func prefetch(_ statements: [Statement]) throws(StorageError) {
        try connection.prefetch(statements)
    }

    /// Runs `writes` (each a statement's SQL and values), which do not depend on each other, in
    /// order: on PostgreSQL in one round trip (with what is held back); each one's changed-row
    /// count, as ``changes`` gives it. For writes whose counts decide what follows (upserts that
    /// skip an unchanged row). The first error is thrown, and nothing after it ran.
    package func runTogether(_ writes: [(sql: String, values: [(any StatementValue)?])]) throws(StorageError) -> [Int] {
        guard !writes.isEmpty else { return [] }
        guard let postgres = connection as? PostgresConnection else {
            var counts: [Int] = []
            counts.reserveCapacity(writes.count)
            for write in writes {
                try cached(write.sql).bind(write.values).run()
                counts.append(changes)
            }
            return counts
        }
        var requests: [(name: String, values: [SQLValue?])] = []
        requests.reserveCapacity(writes.count)
        for write in writes {
            let statement = try postgres.cached(write.sql)
            try statement.bind(write.values)
            requests.append(statement.request)
            statement.reset()
        }
        return try postgres.runCounting(requests)
    }

    /// Resets every cached statement, ending any read it had begun.
    func resetCachedStatements() {
        for statement in statements.values { statement.reset() }
    }

    /// Runs `body` in one read transaction (`BEGIN DEFERRED`): every query in it sees the same
    /// committed snapshot, whatever the writer commits meanwhile. Inside a transaction, just `body`.
    /// On PostgreSQL, a `REPEATABLE READ, READ ONLY` transaction: the same one snapshot.
    ///
    /// `mark`: the ``ChangeFeed`` mark the snapshot is given (``snapshotMark``) instead of the
    /// feed's mark now: a replica's read takes it before it is routed, and the routing makes sure
    /// every change heard up to it is in the snapshot (``ReplicaSet``).
    package func readTransaction<T>(mark: Int64? = nil, _ body: () throws -> T) throws -> T {
        guard !inTransaction else { return try body() }
        snapshotMark = mark ?? changeFeed?.mark ?? 0
        try connection.beginReading()
        do {
            let value = try body()
            resetCachedStatements()
            try connection.endReading(later: endsReadsLater)
            return value
        } catch {
            resetCachedStatements()
            try? connection.rollback()
            throw error
        }
    }

    /// On PostgreSQL, whether a read transaction's `COMMIT` is held back and sent with the next
    /// request (a round trip fewer per read), for a connection whose owner calls ``sendHeld()``
    /// whenever it falls idle, so that no snapshot stays open (``DatabaseQueue``'s workers).
    var endsReadsLater = false

    /// Sends what the connection holds back for its next request, alone: a read's `COMMIT`
    /// (``endsReadsLater``). Nothing on SQLite.
    func sendHeld() throws(StorageError) { try connection.sendHeld() }

    /// Runs `body` in a `BEGIN IMMEDIATE` transaction: committed when it returns, rolled back when it
    /// throws. Inside another transaction it is part of that one (which alone decides durability),
    /// with no savepoint of its own: when it throws, what it wrote is undone with the innermost
    /// ``savepoint(_:)`` around it (or the whole transaction), which therefore fails too, even if
    /// a caller in between catches the error and goes on. A caller that means to go on after a
    /// failure opens a ``savepoint(_:)`` for it. (On PostgreSQL a savepoint is a subtransaction,
    /// and two statements.)
    ///
    /// `durable` commits with `synchronous = FULL`: when it returns, the commit is on disk, not only
    /// in the WAL's page cache. For writes acknowledged to a sender who will not send again (Apple's
    /// notifications); a power cut can undo a `NORMAL` commit, never a `FULL` one.
    ///
    /// On PostgreSQL a commit is as durable as the server's `synchronous_commit` says (on, its
    /// default: on disk), and a `durable` one is on disk whatever it says. The transaction is a
    /// plain `BEGIN` (READ COMMITTED): reads take no locks, so a save that reads and then writes
    /// must guard the write itself (a compare-and-set such as the subscriber's version).
    package func transaction<T>(durable: Bool = false, _ body: () throws -> T) throws -> T {
        if inTransaction { return try joined(body) }
        let started = ContinuousClock.now
        var outcome = "rolled_back"
        defer {
            let (seconds, attoseconds) = (ContinuousClock.now - started).components
            Timer(
                label: "database_write_duration_seconds",
                dimensions: [("durability", durable ? "full" : "normal"), ("outcome", outcome)], factory: metrics
            ).recordNanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
        }
        snapshotMark = changeFeed?.mark ?? 0
        try connection.beginWriting(durable: durable)
        defer { commitFollowsLastSave = false }
        do {
            let value = try body()
            if failedWithin != nil { throw Self.partFailed }
            resetCachedStatements()
            heldLocks = []
            try connection.commit()
            outcome = "committed"
            return value
        } catch {
            resetCachedStatements()
            try? connection.rollback()
            notedChanges = []
            heldLocks = []
            (savepoints, failedWithin) = (0, nil)
            throw error
        }
    }

    /// Whether a transaction is open on this connection.
    package var inTransaction: Bool { connection.inTransaction }

    /// Savepoints open in the current transaction (``savepoint(_:)``).
    private var savepoints = 0
    /// When a ``transaction(durable:_:)`` nested without a savepoint threw: the depth of the
    /// savepoint whose rollback undoes what it wrote (0: the transaction's). Until it rolls back,
    /// nothing open, that one or inside it, may succeed (a savepoint opened inside it later is
    /// rolled back with it in any case).
    private var failedWithin: Int?
    /// What a transaction or savepoint throws when a part of it failed and a caller went on.
    static let partFailed = StorageError(
        .rolledBack, "a part of this transaction failed, and only rolling it back as a whole undoes that part")

    /// `body` as part of the transaction open, with no savepoint (``transaction(durable:_:)``).
    private func joined<T>(_ body: () throws -> T) throws -> T {
        do {
            let value = try body()
            if failedWithin != nil { throw Self.partFailed }  // a part inside it failed, and a caller went on
            return value
        } catch {
            failedWithin = min(failedWithin ?? savepoints, savepoints)
            throw error
        }
    }

    /// Runs `body` so that, when it throws, what it wrote alone is undone and its caller may go on:
    /// inside a transaction in a savepoint (a group commit's save, a probe that writes to see what
    /// would follow), outside one in a transaction of its own.
    package func savepoint<T>(_ body: () throws -> T) throws -> T {
        guard inTransaction else { return try transaction(body) }
        let (noted, held) = (notedChanges.count, heldLocks.count)
        try connection.savepoint()
        savepoints += 1
        do {
            let value = try body()
            if failedWithin != nil { throw Self.partFailed }  // a part inside it failed, and a caller went on
            try connection.releaseSavepoint(commitFollows: commitFollowsLastSave)
            savepoints -= 1
            return value
        } catch {
            try? connection.rollbackToSavepoint()
            if let failed = failedWithin, failed >= savepoints { failedWithin = nil }  // undone
            savepoints -= 1
            notedChanges.removeSubrange(noted...)
            heldLocks.removeSubrange(held...)  // released with the savepoint
            throw error
        }
    }

    /// Set by a group commit while it runs its last save: nothing but the commit follows that
    /// save's savepoint (the outermost), so on PostgreSQL its writes go with the commit (a failed
    /// commit is then each save's to run again alone: ``DatabaseQueue``).
    var commitFollowsLastSave = false

    /// On PostgreSQL, sets the server setting `name` to `value` until the current transaction ends
    /// (`SET LOCAL`, sent with the next statement); nothing on SQLite.
    package func setLocal(_ name: String, _ value: String) throws(StorageError) {
        try connection.setLocal(name, value)
    }

    /// Notes that `appUserID` changed in the current transaction (PostgreSQL; see ``ChangeLog``).
    func noteChange(_ appUserID: String) {
        guard dialect == .postgresql else { return }
        notedChanges.append(appUserID)
    }

    /// The changes noted by transactions committed since the last call.
    func takeNotedChanges() -> [String] {
        guard !inTransaction, !notedChanges.isEmpty else { return [] }
        defer { notedChanges = [] }
        return notedChanges
    }

    /// Whether the database has a table named `name` (in the connection's schema on PostgreSQL).
    package func hasTable(_ name: String) throws(StorageError) -> Bool {
        let sql =
            dialect == .sqlite
            ? "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?"
            : "SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = ?"
        let count = try cached(sql).bind([name])
        defer { count.reset() }
        return try count.step() && count.int(0) > 0
    }

    /// Makes writers that touch any of the same `keys` wait for each other until the current
    /// transaction ends. SQLite has one writer at a time, so there it does nothing; on PostgreSQL,
    /// where connections write at once, it takes a transaction-scoped advisory lock per key, in
    /// sorted order (so that two writers locking overlapping keys never deadlock on them). Take the
    /// locks before the first write: a save that reads and then writes (who holds a purchase,
    /// then taking it) is then what it is on SQLite. A key the transaction holds already is not
    /// locked again.
    package func lock(_ keys: [String], withNextRead: Bool = false) throws(StorageError) {
        guard dialect == .postgresql, !keys.isEmpty else { return }
        // By their bytes, as identifiers are compared (two spellings of one name are two keys).
        var wanted: [[UInt8]] = []
        for key in keys.map({ Array($0.utf8) }).sorted(by: { $0.lexicographicallyPrecedes($1) })
        where !heldLocks.contains(key) && wanted.last != key {
            wanted.append(key)
        }
        guard !wanted.isEmpty else { return }
        // One statement for them all, in one round trip: a projection's expressions are
        // evaluated in order, so the locks are taken in the sorted order.
        let statement = try cached(
            "SELECT "
                + Array(repeating: "pg_advisory_xact_lock(hashtextextended(?, 0))", count: wanted.count)
                .joined(separator: ", "))
        let bound = try statement.bind(wanted.map { String(decoding: $0, as: UTF8.self) })
        // Sent with the next statement whose answer is awaited, which the server runs after it:
        // for a caller whose next step is such a read (what the lock guards), one round trip
        // fewer. Its failure (`lock_timeout`, a deadlock) is then that statement's, in the same
        // savepoint.
        if withNextRead { try bound.runLater() } else { try bound.run() }
        if inTransaction { heldLocks += wanted }  // outside one, the locks ended with the statement
    }

    /// Whether this connection leads the work named `key` among every process on the database:
    /// on PostgreSQL it takes a session-level advisory lock on the key unless another connection
    /// holds it, and keeps it until it closes (a process that stops, or dies, lets the next take
    /// over); on SQLite, which one process serves, always. For work that any process could do
    /// but that one should, lest each does it all (the chart rollups' keeper).
    package func lead(_ key: String) throws(StorageError) -> Bool {
        guard dialect == .postgresql else { return true }
        guard !ledKeys.contains(key) else { return true }
        let statement = try cached("SELECT pg_try_advisory_lock(hashtextextended(?, 0))::int").bind([key])
        defer { statement.reset() }
        guard try statement.step(), statement.int(0) == 1 else { return false }
        ledKeys.insert(key)
        return true
    }

    /// Copies the whole database to a new file at `path`, online, with SQLite's backup API
    /// (sqlite.org/backup.html). By default in one step: in WAL mode that is one read transaction,
    /// a consistent snapshot that never blocks writers (a sliced copy would restart on each write
    /// from another connection). Refuses an existing file. Returns the pages copied.
    @discardableResult
    package func backup(to path: String, pagesPerStep: Int32 = -1) throws(StorageError) -> Int {
        guard let sqlite else {
            throw StorageError(.postgres, "backup copies SQLite files; back PostgreSQL up with pg_dump")
        }
        guard !FileManager.default.fileExists(atPath: path) else {
            throw StorageError(.open, "\(path) exists: a backup never overwrites")
        }
        return try sqlite.backup(to: path, pagesPerStep: pagesPerStep)
    }

    /// Rows changed by the last INSERT, UPDATE or DELETE (an upsert whose WHERE skipped the row: 0).
    package var changes: Int { connection.changes }

    /// The first column of the first row as text, or nil when there is no row or it is NULL.
    package func scalarText(_ sql: String) throws(StorageError) -> String? {
        let statement = try prepare(sql)
        guard try statement.step() else { return nil }
        return statement.text(0)
    }

    /// The first column of the first row as an integer, or nil when there is no row or it is NULL.
    package func scalarInt(_ sql: String) throws(StorageError) -> Int64? {
        let statement = try prepare(sql)
        guard try statement.step(), !statement.isNull(0) else { return nil }
        return statement.int(0)
    }

    /// The SQLite library's version, e.g. `3.40.1`.
    package static var sqliteVersion: String { SQLiteConnection.version }
}
