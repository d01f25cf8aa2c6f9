import Testing

@testable import HTTPServer

@Suite struct HTTPHeadersTests {
    @Test func listElementsAreSplitAndTrimmedAsBytes() {
        #expect("a, b ,\tc".httpListElements() == ["a", "b", "c"])
        #expect(",, a,".httpListElements() == ["", "", "a", ""])
        #expect("".httpListElements() == [""])
        // Swift reads "," + U+0301 and " " + U+0301 as single Characters; HTTP reads bytes.
        #expect("keep-alive,\u{301}x".httpListElements() == ["keep-alive", "\u{301}x"])
        #expect(" \u{301}close".httpListElements() == ["\u{301}close"])
        #expect("é , ü".httpListElements() == ["é", "ü"])
    }

    @Test func trimmingStopsAtBytesNotCharacters() {
        #expect("  x \t".trimmingASCIIWhitespace() == "x")
        #expect(" \t ".trimmingASCIIWhitespace() == "")
        #expect("x \u{301}".trimmingASCIIWhitespace().utf8.elementsEqual("x \u{301}".utf8))
        #expect("\u{301} x".trimmingASCIIWhitespace().utf8.elementsEqual("\u{301} x".utf8))
    }

    @Test func tokensAreFoundInEveryFieldCaseInsensitively() {
        var headers = HTTPHeaders()
        headers.add(name: "Connection", value: "upgrade")
        headers.add(name: "connection", value: "x,\u{1713}, Keep-Alive")
        #expect(headers.containsToken("keep-alive", in: "Connection"))
        #expect(headers.containsToken("UPGRADE", in: "connection"))
        #expect(!headers.containsToken("close", in: "Connection"))
        #expect(!headers.containsToken("keep", in: "Connection"))
    }

    /// Names are equal byte for byte, or as the same ASCII letter in either case: never two bytes
    /// that differ by the case bit but are not letters (`@` and a backquote), nor non-ASCII.
    @Test func namesCompareAsASCIILettersIgnoringCase() {
        #expect(HTTPHeaders.namesEqual("Content-Type", "content-TYPE"))
        #expect(HTTPHeaders.namesEqual("x-a", "X-A"[...]))
        #expect(!HTTPHeaders.namesEqual("a@b", "a`b"))
        #expect(!HTTPHeaders.namesEqual("a[b", "a{b"))
        #expect(!HTTPHeaders.namesEqual("É", "é"))
        #expect(!HTTPHeaders.namesEqual("ab", "abc"))
        #expect(HTTPHeaders.namesEqual("", ""))
    }

    @Test func mediaTypeIgnoresParametersAndCase() {
        let json: HTTPHeaders = ["Content-Type": "Application/JSON ; charset=utf-8"]
        #expect(json.hasMediaType("application/json"))
        #expect(!json.hasMediaType("application/jsonx"))
        let none = HTTPHeaders()
        #expect(!none.hasMediaType("application/json"))
    }
}
