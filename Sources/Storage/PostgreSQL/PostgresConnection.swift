import CPostgreSQL
import Glibc

/// One PostgreSQL connection through libpq; the only owner of its `PGconn*`, closed in `deinit`.
///
/// Blocking, like ``Database``: not `Sendable`, used from one thread at a time (a pool's own
/// thread, never one of Swift's cooperative ones). Statements are written as for SQLite (`?`
/// parameters, translated by ``PostgresSQL``), prepared once per connection and kept. Transactions
/// are ``Database``'s, the same for both backends.
public final class PostgresConnection {
    private let handle: OpaquePointer
    /// Prepared statements by the SQL the caller wrote.
    private var statements: [String: PostgresStatement] = [:]
    /// Rows the last statement run inserted, updated or deleted.
    public internal(set) var changes = 0
    /// Rows every statement run on this connection inserted, updated or deleted.
    public internal(set) var totalChanges: Int64 = 0

    /// Connects to `url` (`postgresql://user@host:port/db?…`, libpq's syntax). The error never
    /// repeats the URL: it may hold a password.
    public init(url: String) throws(StorageError) {
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

    /// Runs one or more statements that take no parameters.
    public func execute(_ sql: String) throws(StorageError) {
        let result = PQexec(handle, sql)
        defer { PQclear(result) }
        try check(result)
    }

    /// The statement for `sql`, prepared on first use and kept.
    public func cached(_ sql: String) throws(StorageError) -> PostgresStatement {
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

    /// Whether a transaction is open on this connection.
    public var inTransaction: Bool { PQtransactionStatus(handle) != PQTRANS_IDLE }

    /// The process id of the server backend serving this connection (what a notification it sent
    /// carries).
    public var backendPID: Int32 { PQbackendPID(handle) }

    /// The connection's socket, to wait on for notifications (-1 when closed).
    var socket: Int32 { PQsocket(handle) }

    /// One notification received by a connection that listens.
    public struct Notification: Sendable, Equatable {
        public var channel: String
        public var payload: String
        /// The backend that sent it (``backendPID`` of the sender's connection).
        public var senderPID: Int32
    }

    /// Reads what the server sent and returns the notifications received (after `LISTEN`); throws
    /// when the connection is lost.
    public func notifications() throws(StorageError) -> [Notification] {
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
        let texts: [String?] = values.map {
            switch $0 {
            case .int(let v)?: String(v)
            case .text(let v)?: v
            case nil: nil
            }
        }
        let result = withCStrings(texts) { pointers in
            PQexecPrepared(handle, name, Int32(pointers.count), pointers, nil, nil, 0)
        }
        guard let result else { throw StorageError(.postgres, Self.message(PQerrorMessage(handle))) }
        do { try check(result) } catch {
            PQclear(result)
            throw error
        }
        // As SQLite counts: rows inserted, updated or deleted (a SELECT leaves the count alone).
        let command = String(cString: PQcmdStatus(result))
        if command.hasPrefix("INSERT") || command.hasPrefix("UPDATE") || command.hasPrefix("DELETE") || command.hasPrefix("MERGE")
        {
            changes = Int(String(cString: PQcmdTuples(result))) ?? 0
            totalChanges += Int64(changes)
        }
        return result
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

/// Calls `body` with `strings` as C strings (nil stays a null pointer: SQL NULL).
private func withCStrings<R>(_ strings: [String?], _ body: ([UnsafePointer<CChar>?]) -> R) -> R {
    var copies: [UnsafeMutablePointer<CChar>?] = strings.map { $0.flatMap { strdup($0) } }
    defer { for copy in copies { free(copy) } }
    return copies.withUnsafeMutableBufferPointer { buffer in
        body(buffer.map { $0.map { UnsafePointer($0) } })
    }
}

/// A prepared statement on a ``PostgresConnection``, with ``Statement``'s shape: bind, then step
/// through the rows (the whole result is fetched at the first step) or run it.
/// Parameters are 1-based; columns are 0-based.
public final class PostgresStatement {
    let name: String
    /// How many parameters the SQL numbers.
    let parameters: Int
    private unowned let connection: PostgresConnection
    private var values: [SQLValue?] = []
    private var result: OpaquePointer?
    private var row = -1
    private var rows = 0

    init(name: String, parameters: Int, connection: PostgresConnection) {
        self.name = name
        self.parameters = parameters
        self.connection = connection
    }

    deinit { reset() }

    /// Binds values to parameters 1...n in order; nil binds NULL. Resets a result begun.
    @discardableResult
    public func bind(_ values: [(any StatementValue)?]) throws(StorageError) -> PostgresStatement {
        reset()
        guard values.count == parameters else {
            throw StorageError(.postgres, "\(values.count) values for \(parameters) parameters")
        }
        self.values = values.map { $0?.sqlValue }
        return self
    }

    /// Drops the result (bindings stay).
    public func reset() {
        if let result { PQclear(result) }
        result = nil
        row = -1
        rows = 0
    }

    /// Advances to the next row; false when done. The first step runs the statement; a step after
    /// the last runs it again, as SQLite's does (a cached statement is stepped again unbound).
    public func step() throws(StorageError) -> Bool {
        if result == nil {
            let result = try connection.run(name, values)
            self.result = result
            rows = Int(PQntuples(result))
        }
        row += 1
        guard row < rows else {
            reset()
            return false
        }
        return true
    }

    /// Runs the statement to completion, discarding rows.
    public func run() throws(StorageError) {
        reset()
        PQclear(try connection.run(name, values))
    }

    /// Whether the column is NULL; a column past the last is (as SQLite reads it), without
    /// libpq's complaint on standard error.
    public func isNull(_ column: Int32) -> Bool {
        column >= PQnfields(result) || PQgetisnull(result, Int32(row), column) == 1
    }
    /// The column as an integer; a boolean is 1 or 0, as SQLite gives a comparison.
    /// Read from libpq's text straight (a chart reads hundreds of thousands): 0 for text that is
    /// not an integer, as `Int64(text) ?? 0` would give.
    public func int(_ column: Int32) -> Int64 {
        guard column < PQnfields(result), let value = PQgetvalue(result, Int32(row), column) else { return 0 }
        if PQftype(result, column) == Self.booleanType { return value[0] == CChar(UInt8(ascii: "t")) && value[1] == 0 ? 1 : 0 }
        return Self.integer(value) ?? 0
    }

    /// A NUL-terminated decimal integer (an optional sign, then digits) within Int64's range; nil
    /// for anything else.
    static func integer(_ text: UnsafePointer<CChar>) -> Int64? {
        var i = 0
        let sign = UInt8(bitPattern: text[0])
        let negative = sign == UInt8(ascii: "-")
        if negative || sign == UInt8(ascii: "+") { i = 1 }
        var magnitude: UInt64 = 0
        let first = i
        while text[i] != 0 {
            let digit = UInt8(bitPattern: text[i]) &- UInt8(ascii: "0")
            guard digit < 10 else { return nil }
            let (times, o1) = magnitude.multipliedReportingOverflow(by: 10)
            let (sum, o2) = times.addingReportingOverflow(UInt64(digit))
            guard !o1, !o2 else { return nil }
            magnitude = sum
            i += 1
        }
        guard i > first else { return nil }
        if negative { return magnitude <= UInt64(Int64.max) + 1 ? Int64(truncatingIfNeeded: 0 &- magnitude) : nil }
        return magnitude <= UInt64(Int64.max) ? Int64(magnitude) : nil
    }

    /// PostgreSQL's `bool` type (its OID, pg_type.dat).
    private static let booleanType: Oid = 16
    /// `int8`, `int2`, `int4` (pg_type.dat).
    private static let integerTypes: Set<Oid> = [20, 21, 23]

    /// How many columns the current result has (after a step).
    public var columnCount: Int32 { result.map { PQnfields($0) } ?? 0 }
    /// A column's name in the current result.
    public func columnName(_ column: Int32) -> String { PQfname(result, column).map { String(cString: $0) } ?? "" }
    /// Whether a column is of an integer type.
    public func isInteger(_ column: Int32) -> Bool { Self.integerTypes.contains(PQftype(result, column)) }
    public func text(_ column: Int32) -> String? {
        guard !isNull(column), let value = PQgetvalue(result, Int32(row), column) else { return nil }
        return String(cString: value)
    }
}
