import Testing

@testable import DatabaseEngine

@Suite("PostgreSQL parameters")
struct PostgresParametersTests {
    @Test func eachStringIsItsOwnCStringAndNilIsANullPointer() {
        for strings: [String?] in [
            [], [nil], [""], ["a", nil, "", "Zoe\u{0308} 日本", nil], [String(repeating: "x", count: 5000), "y"],
        ] {
            let seen: [String?] = withCStrings(strings) { pointers in pointers.map { $0.map { String(cString: $0) } } }
            #expect(seen == strings)
        }
    }
}
