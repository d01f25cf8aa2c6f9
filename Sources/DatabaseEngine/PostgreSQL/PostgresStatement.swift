import CPostgreSQL

/// A prepared statement on a ``PostgresConnection``, with ``Statement``'s shape: bind, then step
/// through the rows (the whole result is fetched at the first step) or run it.
/// Parameters are 1-based; columns are 0-based.
package final class PostgresStatement: CompiledStatement {
    let name: String
    /// How many parameters the SQL numbers.
    let parameters: Int
    private unowned let connection: PostgresConnection
    private var values: [SQLValue?] = []
    private var result: OpaquePointer?
    private var row = -1
    private var rows = 0
    /// Whether `result` came from a pipeline (``adopt(_:)``) rather than the statement's own step.
    private var prefetched = false

    init(name: String, parameters: Int, connection: PostgresConnection) {
        self.name = name
        self.parameters = parameters
        self.connection = connection
    }

    deinit { reset() }

    /// Binds values to parameters 1...n in order; nil binds NULL. Resets a result begun, but for
    /// a prefetched one not yet stepped into, bound again with the same values (a store's reader
    /// binding what ``Database/prefetch(_:)`` ran for it): that one stays, to be stepped through.
    package func bind(_ values: [(any StatementValue)?]) throws(StorageError) {
        guard values.count == parameters else {
            reset()
            throw StorageError(.postgres, "\(values.count) values for \(parameters) parameters")
        }
        let bound = values.map { $0?.sqlValue }
        if prefetched && row == -1 && bound == self.values { return }
        reset()
        self.values = bound
    }

    /// The statement's name and bound values, for a pipeline.
    var request: (name: String, values: [SQLValue?]) { (name, values) }

    /// Takes `result`, the statement's run in a pipeline, as if its next step had run it.
    func adopt(_ result: OpaquePointer) {
        reset()
        self.result = result
        rows = Int(PQntuples(result))
        prefetched = true
    }

    /// Drops the result (bindings stay).
    package func reset() {
        if let result { PQclear(result) }
        result = nil
        row = -1
        rows = 0
        prefetched = false
    }

    /// Advances to the next row; false when done. The first step runs the statement; a step after
    /// the last runs it again, as SQLite's does (a cached statement is stepped again unbound).
    package func step() throws(StorageError) -> Bool {
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
    package func run() throws(StorageError) {
        reset()
        PQclear(try connection.run(name, values))
    }

    /// Runs the statement with the next one whose answer is awaited, or the commit, in the same
    /// round trip (in a transaction; outside one, now). Its error, if any, is thrown there, and
    /// ``PostgresConnection/changes`` counts it only then: for writes whose answer nobody reads,
    /// that fail only when the whole transaction does.
    package func runLater() throws(StorageError) {
        reset()
        try connection.runLater(name, values)
    }

    /// ``runLater()`` whose rows are handed to `answer` once that round trip has succeeded
    /// (``PostgresConnection/runLater(_:_:answer:)``).
    func runLater(answer: @escaping ([[String?]]) -> Void) throws(StorageError) {
        reset()
        try connection.runLater(name, values, answer: answer)
    }

    /// Whether the column is NULL; a column past the last is (as SQLite reads it), without
    /// libpq's complaint on standard error.
    package func isNull(_ column: Int32) -> Bool {
        column >= PQnfields(result) || PQgetisnull(result, Int32(row), column) == 1
    }
    /// The column as an integer; a boolean is 1 or 0, as SQLite gives a comparison.
    /// Read from libpq's text straight (a chart reads hundreds of thousands): 0 for text that is
    /// not an integer, as `Int64(text) ?? 0` would give.
    package func int(_ column: Int32) -> Int64 {
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
    package var columnCount: Int32 { result.map { PQnfields($0) } ?? 0 }
    /// A column's name in the current result.
    package func columnName(_ column: Int32) -> String { PQfname(result, column).map { String(cString: $0) } ?? "" }
    /// Whether the current row's value in a column is an integer (of an integer type, not NULL).
    package func isInteger(_ column: Int32) -> Bool { Self.integerTypes.contains(PQftype(result, column)) && !isNull(column) }
    package func text(_ column: Int32) -> String? {
        guard !isNull(column), let value = PQgetvalue(result, Int32(row), column) else { return nil }
        return String(cString: value)
    }
    package func bytes(_ column: Int32) -> [UInt8]? {
        guard !isNull(column), let value = PQgetvalue(result, Int32(row), column) else { return nil }
        return Array(UnsafeRawBufferPointer(start: value, count: Int(PQgetlength(result, Int32(row), column))))
    }
}
