import CPostgreSQL
import Glibc
import Synchronization

/// What a pool's PostgreSQL connections asked of the server: statements run (transaction control
/// included) and round trips (requests sent, then their answers waited for). Preparing a statement,
/// once per connection, is counted in neither. Shared by a ``DatabaseQueue``'s connections, read by
/// the test that keeps a POST's count from creeping back up.
package final class PostgresTraffic: Sendable {
    private let counts = Mutex<(statements: Int, roundTrips: Int)>((0, 0))

    package init() {}

    /// Statements and round trips so far.
    package var current: (statements: Int, roundTrips: Int) { counts.withLock { $0 } }

    func add(statements: Int, roundTrips: Int) {
        counts.withLock {
            $0.statements += statements
            $0.roundTrips += roundTrips
        }
    }
}

/// One PostgreSQL connection through libpq; the only owner of its `PGconn*`, closed in `deinit`.
///
/// Blocking, like ``Database``: not `Sendable`, used from one thread at a time (a pool's own
/// thread, never one of Swift's cooperative ones). Statements are written as for SQLite (`?`
/// parameters, translated by ``PostgresSQL``), prepared once per connection and kept. Transactions
/// are ``Database``'s, the same for both backends.
package final class PostgresConnection {
    private let handle: OpaquePointer
    /// Prepared statements by the SQL the caller wrote.
    private var statements: [String: PostgresStatement] = [:]
    /// Rows the last statement run inserted, updated or deleted.
    package internal(set) var changes = 0
    /// Rows every statement run on this connection inserted, updated or deleted.
    package internal(set) var totalChanges: Int64 = 0
    /// Where this connection counts what it asks of the server (a pool's, shared).
    let traffic: PostgresTraffic

    /// Connects to `url` (`postgresql://user@host:port/db?…`, libpq's syntax). The error never
    /// repeats the URL: it may hold a password.
    package init(url: String, traffic: PostgresTraffic = PostgresTraffic()) throws(StorageError) {
        self.traffic = traffic
        guard let connection = PQconnectdb(url) else { throw StorageError(.open, "cannot connect to PostgreSQL: out of memory") }
        guard PQstatus(connection) == CONNECTION_OK else {
            let message = Self.message(PQerrorMessage(connection))
            PQfinish(connection)
            throw StorageError(.open, "cannot connect to PostgreSQL: \(message)")
        }
        handle = connection
        try execute("SET client_min_messages = warning")
    }

    deinit {
        statements = [:]
        PQfinish(handle)
    }

    /// Runs one or more statements that take no parameters (after what is held back).
    package func execute(_ sql: String) throws(StorageError) {
        if !held.isEmpty { try send([]) }
        traffic.add(statements: 1, roundTrips: 1)
        let result = PQexec(handle, sql)
        defer { PQclear(result) }
        try check(result)
    }

    // MARK: Held back for the next round trip

    /// What answers nothing but success, held back until a statement whose answer is awaited and
    /// sent with it in one pipeline (postgresql.org/docs/15/libpq-pipeline-mode.html): one round
    /// trip instead of one each. Transaction control (`BEGIN`, `SAVEPOINT`, `RELEASE`): a
    /// transaction that ran nothing costs none, a savepoint in which nothing ran is never sent.
    /// And writes whose answer nobody reads (``PostgresStatement/runLater()``).
    private var held: [Held] = []
    private enum Held: Equatable {
        case control(String)
        /// `SAVEPOINT s<depth>` and `RELEASE s<depth>`: each level has its own name, so that a
        /// rollback to one is to that one whatever the server has opened inside it.
        case savepoint(Int)
        case release(Int)
        /// A prepared statement's name and values.
        case write(String, [String?])
        /// A prepared statement's name and values, whose rows go to `answers[id]` once the round
        /// trip it is sent in has succeeded (``runLater(_:_:answer:)``).
        case answered(String, [String?], id: Int)

        var sql: String {
            switch self {
            case .control(let sql): sql
            case .savepoint(let depth): "SAVEPOINT s\(depth)"
            case .release(let depth): "RELEASE s\(depth)"
            case .write(let name, _), .answered(let name, _, _): name
            }
        }
    }
    /// Whether a statement is among `held` (else only transaction control, which cannot fail).
    private var holdsWrites: Bool {
        held.contains {
            switch $0 {
            case .write, .answered: true
            case .control, .savepoint, .release: false
            }
        }
    }
    /// Who is handed the rows of each `.answered` request held back, by its id.
    private var answers: [Int: ([[String?]]) -> Void] = [:]
    private var nextAnswer = 0
    /// Where `BEGIN` is in `held`, while it is: the caller's transaction has begun, the server's
    /// not yet. (A read's `COMMIT` may precede it.)
    private var heldBegin: Int?
    private var beginHeld: Bool { heldBegin != nil }
    /// Whether a read's `COMMIT` is among `held` (``endReading(later:)``): the caller's
    /// transaction has ended, the server's not yet.
    private var endHeld = false
    /// Savepoints open, as the caller sees them: the innermost is `s<depth>`.
    private var depth = 0

    /// Begins a transaction with `sql` (`BEGIN …`), sent with the next statement.
    func begin(_ sql: String) {
        (heldBegin, depth) = (held.count, 0)
        held.append(.control(sql))
    }

    /// Holds `sql`, a statement that answers nothing but success (`SET LOCAL …`), back for the next
    /// round trip.
    func hold(_ sql: String) { held.append(.control(sql)) }

    /// Opens a savepoint (`s1` outermost, `s2` inside it, …), once the writes held back before it
    /// have been sent: their errors are not its own (nor is a rollback to it theirs), so they are
    /// thrown before it opens. A caller that rolls back to a savepoint and goes on (a probe) then
    /// never takes an earlier write's failure for the probe's.
    func savepoint() throws(StorageError) {
        if holdsWrites { _ = try send([]) }
        depth += 1
        held.append(.savepoint(depth))
    }

    /// Releases the innermost savepoint: nothing to send when it was never sent. The `RELEASE` is
    /// held back, and so are the writes held back in it: a failure among them fails whatever
    /// awaited statement they go with, in the savepoint enclosing this one, and a rollback to that
    /// one (by its name) undoes this one's work with its own. The outermost savepoint is a group
    /// commit's save, and its writes are sent before its release: were they sent with the next
    /// save of the group, a write that waited past the group's lock timeout would fail there, as
    /// that save's error, and the save told it was saved would be undone with the transaction.
    /// `commitFollows`: nothing but the commit comes after the outermost one (the group's last
    /// save), so its writes go with the commit, whose failure its caller sees.
    func releaseSavepoint(commitFollows: Bool) throws(StorageError) {
        if held.last == .savepoint(depth) {
            held.removeLast()
        } else {
            // A failure leaves it open, for the caller's rollback to it.
            if depth == 1 && !commitFollows && holdsWrites { _ = try send([]) }
            held.append(.release(depth))
        }
        depth -= 1
    }

    /// Commits, with what is held back, in one round trip; nothing to send for a transaction that
    /// ran nothing.
    func commit() throws(StorageError) {
        if let heldBegin, !holdsWrites {
            held.removeSubrange(heldBegin...)  // a read's `COMMIT` before it stays
            self.heldBegin = nil
            return
        }
        held.append(Self.commitRequest)
        try send([])
    }
    private static let commitRequest = Held.control("COMMIT")

    /// Ends a read-only transaction. `later`: its `COMMIT` is held back, sent with the next
    /// request (a read's first statements, a save's), so a read costs no round trip for it; a
    /// caller that may stay idle sends it then (``sendHeld()``), so that no snapshot stays open.
    /// Its outcome is not a failure of what it is sent with: a read whose failure its body
    /// swallowed is rolled back by it, and what it read stands.
    func endReading(later: Bool) throws(StorageError) {
        guard later, !beginHeld else { return try commit() }
        held.append(Self.readEnd)
        endHeld = true
    }
    private static let readEnd = Held.control("COMMIT -- a read's")

    /// Sends what is held back, alone (nothing when nothing is).
    func sendHeld() throws(StorageError) {
        if !held.isEmpty { try send([]) }
    }

    /// Rolls the transaction back (nothing to send when it never reached the server).
    func rollback() throws(StorageError) {
        defer { depth = 0 }
        if let heldBegin {
            held.removeSubrange(heldBegin...)  // never sent; a read's `COMMIT` before it stays
            self.heldBegin = nil
            answers = [:]
            return
        }
        held = []
        answers = [:]
        try execute("ROLLBACK")
    }

    /// Rolls back to the innermost savepoint and releases it. What is held back in it is dropped
    /// (a savepoint never sent costs no round trip); what the server has run in it is undone by
    /// name, whatever savepoints inside it the server still has open (their `RELEASE`s held back,
    /// or not run when a write before them failed).
    func rollbackToSavepoint() throws(StorageError) {
        defer { depth -= 1 }
        if let opened = held.lastIndex(of: .savepoint(depth)) {
            // Only transaction control precedes it in `held` (``savepoint()`` sent the writes).
            for case .answered(_, _, let id) in held[opened...] { answers[id] = nil }
            held.removeSubrange(opened...)
            return
        }
        held = []
        answers = [:]
        try execute("ROLLBACK TO s\(depth); RELEASE s\(depth)")
    }

    /// Holds the prepared statement `name` with `values` back, to be sent with the next request
    /// whose answer is awaited (or the commit); outside a transaction, runs it now.
    func runLater(_ name: String, _ values: [SQLValue?]) throws(StorageError) {
        guard inTransaction else { return PQclear(try run(name, values)) }
        held.append(.write(name, Self.texts(values)))
    }

    /// ``runLater(_:_:)`` for a statement whose rows someone reads: they are handed to `answer`
    /// (each row its columns' text, nil for NULL) once the round trip it goes in has succeeded,
    /// before the call that sent it returns; never when it fails or is rolled back unsent.
    /// Outside a transaction, runs it now.
    func runLater(_ name: String, _ values: [SQLValue?], answer: @escaping ([[String?]]) -> Void) throws(StorageError) {
        guard inTransaction else {
            let result = try run(name, values)
            defer { PQclear(result) }
            return answer(Self.rows(result))
        }
        nextAnswer += 1
        answers[nextAnswer] = answer
        held.append(.answered(name, Self.texts(values), id: nextAnswer))
    }

    /// Every row of `result`, each column as text (nil: NULL).
    private static func rows(_ result: OpaquePointer) -> [[String?]] {
        let columns = PQnfields(result)
        return (0..<PQntuples(result)).map { row in
            (0..<columns).map { column in
                PQgetisnull(result, row, column) == 1 ? nil : String(cString: PQgetvalue(result, row, column))
            }
        }
    }

    /// The statement for `sql`, prepared on first use and kept.
    package func cached(_ sql: String) throws(StorageError) -> PostgresStatement {
        if let statement = statements[sql] { return statement }
        let (translated, parameters) = PostgresSQL.translate(sql)
        let name = "s\(statements.count)"
        let result = PQprepare(handle, name, translated, 0, nil)
        defer { PQclear(result) }
        try check(result)
        let statement = PostgresStatement(name: name, parameters: parameters, connection: self)
        statements[sql] = statement
        return statement
    }

    /// Whether a transaction is open on this connection (begun, even if not yet sent).
    package var inTransaction: Bool { beginHeld || (!endHeld && PQtransactionStatus(handle) != PQTRANS_IDLE) }

    /// The process id of the server backend serving this connection (what a notification it sent
    /// carries).
    package var backendPID: Int32 { PQbackendPID(handle) }

    /// Whether the connection is still good (libpq's `CONNECTION_OK`).
    var isConnected: Bool { PQstatus(handle) == CONNECTION_OK }

    /// The connection's socket, to wait on for notifications (-1 when closed).
    var socket: Int32 { PQsocket(handle) }

    /// One notification received by a connection that listens.
    package struct Notification: Sendable, Equatable {
        package var channel: String
        package var payload: String
        /// The backend that sent it (``backendPID`` of the sender's connection).
        package var senderPID: Int32
    }

    /// Reads what the server sent and returns the notifications received (after `LISTEN`); throws
    /// when the connection is lost.
    package func notifications() throws(StorageError) -> [Notification] {
        guard PQconsumeInput(handle) == 1 else {
            throw StorageError(.postgres, "PostgreSQL connection lost: \(Self.message(PQerrorMessage(handle)))")
        }
        var received: [Notification] = []
        while let notify = PQnotifies(handle) {
            let n = notify.pointee
            received.append(
                Notification(channel: String(cString: n.relname), payload: String(cString: n.extra), senderPID: n.be_pid))
            PQfreemem(notify)
        }
        return received
    }

    /// Runs a prepared statement with `values` (text format) and returns its result, which the
    /// caller clears.
    func run(_ name: String, _ values: [SQLValue?]) throws(StorageError) -> OpaquePointer {
        let texts = Self.texts(values)
        if !held.isEmpty { return try send([(name, texts)])[0] }
        traffic.add(statements: 1, roundTrips: 1)
        let result = withCStrings(texts) { pointers in
            PQexecPrepared(handle, name, Int32(pointers.count), pointers, nil, nil, 0)
        }
        guard let result else { throw StorageError(.postgres, Self.message(PQerrorMessage(handle))) }
        do { try check(result) } catch {
            PQclear(result)
            throw error
        }
        count(result)
        return result
    }

    /// Values as libpq's text format takes them.
    private static func texts(_ values: [SQLValue?]) -> [String?] {
        values.map {
            switch $0 {
            case .int(let v)?: String(v)
            case .text(let v)?: v
            case nil: nil
            }
        }
    }

    /// Runs the prepared statements `requests` (names and values) after what is held back, in
    /// one pipeline and one round trip; returns their results in order, which the caller clears.
    func runAll(_ requests: [(name: String, values: [SQLValue?])]) throws(StorageError) -> [OpaquePointer] {
        try send(requests.map { ($0.name, Self.texts($0.values)) })
    }

    /// ``runAll(_:)`` for writes: each one's changed-row count.
    func runCounting(_ requests: [(name: String, values: [SQLValue?])]) throws(StorageError) -> [Int] {
        try runAll(requests).map { result in
            defer { PQclear(result) }
            return Int(String(cString: PQcmdTuples(result))) ?? 0
        }
    }

    /// Sends what is held back, then `awaited` (prepared statements' names and values), in one
    /// pipeline and one round trip; returns the results of `awaited`, which the caller clears.
    /// The first error is thrown (what followed it in the pipeline was not run), whichever request
    /// it was; `held` is emptied either way.
    @discardableResult
    private func send(_ awaited: [(name: String, values: [String?])]) throws(StorageError) -> [OpaquePointer] {
        var requests = held
        (held, heldBegin, endHeld) = ([], nil, false)
        var answering: [(index: Int, answer: ([[String?]]) -> Void)] = []
        for (index, request) in requests.enumerated() {
            if case .answered(_, _, let id) = request, let answer = answers.removeValue(forKey: id) {
                answering.append((index, answer))
            }
        }
        var answered: [Int: [[String?]]] = [:]
        let firstAwaited = requests.count
        requests += awaited.map { .write($0.name, $0.values) }
        traffic.add(statements: requests.count, roundTrips: 1)
        guard PQenterPipelineMode(handle) == 1 else { throw lost("cannot enter pipeline mode") }
        defer { PQexitPipelineMode(handle) }
        var queued = 0
        for request in requests {
            let sent: Int32
            switch request {
            case .control, .savepoint, .release: sent = PQsendQueryParams(handle, request.sql, 0, nil, nil, nil, nil, 0)
            case .write(let name, let values), .answered(let name, let values, _):
                sent = withCStrings(values) { pointers in
                    PQsendQueryPrepared(handle, name, Int32(pointers.count), pointers, nil, nil, 0)
                }
            }
            guard sent == 1 else { break }
            queued += 1
        }
        guard PQpipelineSync(handle) == 1 else { throw lost("cannot send a pipeline") }
        var failure: StorageError? = queued < requests.count ? lost("cannot queue a statement in a pipeline") : nil
        var results: [OpaquePointer] = []
        results.reserveCapacity(awaited.count)
        for index in 0..<queued {
            // Each request's result, then a null that ends it.
            guard let result = PQgetResult(handle) else {
                for result in results { PQclear(result) }
                throw lost("a pipeline ended early")
            }
            while let extra = PQgetResult(handle) { PQclear(extra) }
            if failure == nil && PQresultStatus(result) != PGRES_PIPELINE_ABORTED {
                do { try check(result) } catch { failure = error }
            }
            // The server answers COMMIT of a transaction an error had ended with ROLLBACK, not an
            // error: never told as committed.
            if failure == nil, requests[index] == Self.commitRequest, String(cString: PQcmdStatus(result)) != "COMMIT" {
                failure = StorageError(.postgres, "the transaction had failed: its COMMIT rolled it back", sqlState: "25P02")
            }
            if failure == nil, case .write = requests[index] { count(result) }
            if failure == nil, case .answered = requests[index] { answered[index] = Self.rows(result) }
            if failure == nil && index >= firstAwaited { results.append(result) } else { PQclear(result) }
        }
        // The sync's own result ends the pipeline.
        while let result = PQgetResult(handle) {
            let status = PQresultStatus(result)
            PQclear(result)
            if status == PGRES_PIPELINE_SYNC { break }
        }
        if let failure {
            for result in results { PQclear(result) }
            throw failure
        }
        for (index, answer) in answering { answer(answered[index] ?? []) }
        return results
    }

    /// The connection's error, for a pipeline that could not be sent or read.
    private func lost(_ what: String) -> StorageError {
        StorageError(.postgres, "\(what): \(Self.message(PQerrorMessage(handle)))")
    }

    /// Counts a statement's changed rows, as SQLite counts: rows inserted, updated or deleted (a
    /// SELECT leaves the count alone).
    private func count(_ result: OpaquePointer) {
        let command = String(cString: PQcmdStatus(result))
        if command.hasPrefix("INSERT") || command.hasPrefix("UPDATE") || command.hasPrefix("DELETE") || command.hasPrefix("MERGE")
        {
            changes = Int(String(cString: PQcmdTuples(result))) ?? 0
            totalChanges += Int64(changes)
        }
    }

    private func check(_ result: OpaquePointer?) throws(StorageError) {
        guard let result else { throw StorageError(.postgres, Self.message(PQerrorMessage(handle))) }
        switch PQresultStatus(result) {
        case PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_EMPTY_QUERY: return
        default:
            let state = PQresultErrorField(result, Int32(UInt8(ascii: "C"))).map { String(cString: $0) }
            throw StorageError(.postgres, Self.message(PQresultErrorMessage(result)), sqlState: state)
        }
    }

    private static func message(_ text: UnsafePointer<CChar>?) -> String {
        guard let text else { return "unknown error" }
        let message = String(cString: text)
        return message.hasSuffix("\n") ? String(message.dropLast()) : message
    }

}
