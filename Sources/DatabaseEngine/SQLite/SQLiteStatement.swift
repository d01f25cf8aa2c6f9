import CSQLite

/// A compiled SQLite statement: the only owner of its `sqlite3_stmt*`, finalized in `deinit`.
final class SQLiteStatement: CompiledStatement {
    private let handle: OpaquePointer

    init(_ handle: OpaquePointer) { self.handle = handle }

    deinit { sqlite3_finalize(handle) }

    /// The error for result code `rc`, in its connection's words.
    private func error(_ rc: Int32) -> StorageError {
        let message = sqlite3_db_handle(handle).map { String(cString: sqlite3_errmsg($0)) } ?? "SQLite error \(rc)"
        return StorageError(.sqlite, message, sqliteCode: rc)
    }

    func bind(_ values: [(any StatementValue)?]) throws(StorageError) {
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
        for (offset, value) in values.enumerated() {
            let index = Int32(offset + 1)
            let rc: Int32 =
                switch value?.sqlValue {
                case .int(let v)?: sqlite3_bind_int64(handle, index, v)
                // Its UTF-8 as the string holds it (a small one's from the stack), with its
                // length: passing the String as a C string made a NUL-terminated copy on the heap
                // per text bound, 380 allocations a POST, and cut it at an embedded NUL.
                case .text(var v)?:
                    v.withUTF8 { receiptd_sqlite3_bind_text_transient(handle, index, $0.baseAddress, Int32($0.count)) }
                case nil: sqlite3_bind_null(handle, index)
                }
            guard rc == SQLITE_OK else { throw error(rc) }
        }
    }

    func reset() { sqlite3_reset(handle) }

    func step() throws(StorageError) -> Bool {
        let rc = sqlite3_step(handle)
        switch rc {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default: throw error(rc)
        }
    }

    func run() throws(StorageError) { while try step() {} }
    func runLater() throws(StorageError) { while try step() {} }

    var columnCount: Int32 { sqlite3_column_count(handle) }
    func columnName(_ column: Int32) -> String { sqlite3_column_name(handle, column).map { String(cString: $0) } ?? "" }
    func isInteger(_ column: Int32) -> Bool { sqlite3_column_type(handle, column) == SQLITE_INTEGER }
    func isNull(_ column: Int32) -> Bool { sqlite3_column_type(handle, column) == SQLITE_NULL }
    func int(_ column: Int32) -> Int64 { sqlite3_column_int64(handle, column) }

    func text(_ column: Int32) -> String? {
        guard let text = sqlite3_column_text(handle, column) else { return nil }
        return String(decoding: UnsafeBufferPointer(start: text, count: Int(sqlite3_column_bytes(handle, column))), as: UTF8.self)
    }

    func bytes(_ column: Int32) -> [UInt8]? {
        guard let text = sqlite3_column_text(handle, column) else { return nil }
        return Array(UnsafeBufferPointer(start: text, count: Int(sqlite3_column_bytes(handle, column))))
    }
}
