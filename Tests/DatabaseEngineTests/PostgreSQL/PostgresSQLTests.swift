import Storage
import Testing

@testable import DatabaseEngine

@Suite("SQLite parameters rewritten for PostgreSQL")
struct PostgresSQLTests {
    @Test(arguments: [
        ("SELECT ? , ?", "SELECT $1 , $2", 2),
        ("UPDATE t SET a = ?3 WHERE b = ?1 AND c = ?2", "UPDATE t SET a = $3 WHERE b = $1 AND c = $2", 3),
        // A bare ? after ?NNN is one more than the largest so far, as SQLite numbers it.
        ("VALUES (?2, ?, ?1, ?)", "VALUES ($2, $3, $1, $4)", 4),
        ("SELECT '?' || ?, \"a?\" FROM t -- why?\nWHERE x = ?", "SELECT '?' || $1, \"a?\" FROM t -- why?\nWHERE x = $2", 2),
        ("SELECT 'it''s ?', ? /* ? */, ?", "SELECT 'it''s ?', $1 /* ? */, $2", 2),
        ("SELECT 1", "SELECT 1", 0),
        ("SELECT 'unterminated ?", "SELECT 'unterminated ?", 0),
        ("SELECT ? /* unterminated ?", "SELECT $1 /* unterminated ?", 1),
    ])
    func numbersParametersAsSQLiteDoes(sql: String, expected: String, parameters: Int) {
        let (translated, count) = PostgresSQL.translate(sql)
        #expect(translated == expected)
        #expect(count == parameters)
    }

    @Test(arguments: [
        ([String](), "{}"),
        (["1000000123"], #"{"1000000123"}"#),
        (["a", "", "NULL"], #"{"a","","NULL"}"#),
        ([#"b"c"#, #"d\e"#, "{f,g}", "ü 🙂"], #"{"b\"c","d\\e","{f,g}","ü 🙂"}"#),
    ])
    func anArrayLiteralQuotesEveryElement(texts: [String], expected: String) {
        #expect(PostgresSQL.arrayLiteral(texts) == expected)
    }
}
