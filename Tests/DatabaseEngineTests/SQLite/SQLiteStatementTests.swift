import Testing

@testable import DatabaseEngine

/// Text goes into SQLite and comes back as its exact bytes, whatever its length.
@Suite("SQLiteStatement")
struct SQLiteStatementTests {
    @Test(arguments: [
        "", "a", "fifteen bytes!!", "sixteen bytes!!!", String(repeating: "long text ", count: 500), "Zo\u{00EB}",
        "Zoe\u{0308}", "日本 \u{1F600}", "a\u{0}b", "\u{0}",
    ])
    func textComesBackAsItsBytes(_ text: String) throws {
        let db = try Database(path: ":memory:")
        let q = try db.prepare("SELECT ?1, ?1 IS NULL, length(CAST(?1 AS BLOB)), typeof(?1)").bind([text])
        #expect(try q.step())
        #expect(Array(q.text(0)!.utf8) == Array(text.utf8))
        #expect(q.bytes(0) == Array(text.utf8))
        #expect(q.int(1) == 0)  // the empty string is '', not NULL
        #expect(q.int(2) == Int64(text.utf8.count))  // an embedded NUL is kept, not an end
        #expect(q.text(3) == "text")
    }
}
