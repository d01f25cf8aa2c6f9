import ReceiptTesting
import Testing

@testable import DatabaseEngine

@Suite("PostgreSQL statements (libpq)", .enabled("PostgreSQL is not installed here") { await PostgresTestServer.isAvailable() })
struct PostgresStatementTests {
    @Test func preparedStatementsBindAndReadIntegersTextAndNull() async throws {
        let db = try PostgresConnection(url: try await PostgresTestServer.freshDatabase())
        try db.execute("CREATE TABLE t (id BIGINT PRIMARY KEY, name TEXT, note TEXT)")
        let insert = try db.cached("INSERT INTO t (id, name, note) VALUES (?, ?, ?)")
        try insert.bind([Int64.max, "ünïcode ' \" ?", nil])
        try insert.run()
        #expect(db.changes == 1)
        try insert.bind([-1, "", "x"])
        try insert.run()
        let select = try db.cached("SELECT id, name, note FROM t ORDER BY id")
        try select.bind([])
        #expect(try select.step())
        #expect(select.int(0) == -1 && select.text(1) == "" && select.text(2) == "x")
        #expect(try select.step())
        #expect(select.int(0) == Int64.max && select.text(1) == "ünïcode ' \" ?")
        #expect(select.isNull(2) && select.text(2) == nil)
        #expect(try !select.step())
        #expect(try db.cached("INSERT INTO t (id, name, note) VALUES (?, ?, ?)") === insert)  // prepared once
    }

    /// Integers are read from libpq's text directly: what `Int64(text) ?? 0` reads, at both ends,
    /// past them, signed, from text that is no integer, and booleans as 1 and 0.
    @Test func integersReadAsTheirTextSays() async throws {
        let db = try PostgresConnection(url: try await PostgresTestServer.freshDatabase())
        let texts = [
            "0", "-0", "7", "+7", "-1", "9223372036854775807", "-9223372036854775808", "9223372036854775808",
            "-9223372036854775809", "99999999999999999999", "00000000000000000000012", "", "-", "+", "1a", " 1", "1.5",
            "١",
        ]
        let select = try db.cached("SELECT ?::text, true, false")
        for text in texts {
            try select.bind([text])
            #expect(try select.step())
            #expect(select.int(0) == Int64(text) ?? 0, "\(text)")
            #expect(select.int(1) == 1 && select.int(2) == 0)
            select.reset()
        }
        let typed = try db.cached("SELECT 9223372036854775807::bigint, (-9223372036854775807 - 1)::bigint, -5::int2")
        try typed.bind([])
        #expect(try typed.step())
        #expect(typed.int(0) == .max && typed.int(1) == .min && typed.int(2) == -5)
    }
}
