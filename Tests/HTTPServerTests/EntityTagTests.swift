import Testing

@testable import HTTPServer

@Suite struct EntityTagTests {
    @Test func weakComparisonIgnoresTheWeakPrefixOnEitherSide() {
        #expect(EntityTag.weakMatch("\"abc\"", anyOf: "\"abc\""))
        #expect(EntityTag.weakMatch("W/\"abc\"", anyOf: "\"x\", \"abc\""))
        #expect(EntityTag.weakMatch("\"abc\"", anyOf: "W/\"abc\""))
        #expect(EntityTag.weakMatch("\"abc\"", anyOf: " * "))
        #expect(!EntityTag.weakMatch("\"abc\"", anyOf: "\"abd\", W/\"ab\""))
        #expect(!EntityTag.weakMatch("\"abc\"", anyOf: ""))
    }

    @Test func listsAreSplitAsBytes() {
        // A comma followed by a combining mark still separates two tags.
        #expect(EntityTag.weakMatch("\"abc\"", anyOf: "\"x\",\u{301}, \"abc\""))
        // Canonically equivalent but different bytes are different tags.
        #expect(!EntityTag.weakMatch("\"\u{e9}\"", anyOf: "\"e\u{301}\""))
    }
}
