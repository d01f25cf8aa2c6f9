import Foundation
import Identifiers
import Testing

@testable import JSON

@Suite("JSON parser")
struct JSONParserTests {
    /// JSONDecoder through JSONValue's Decodable conformance: the reference the parser must match.
    private func reference(_ text: String) -> JSONValue? {
        try? JSONDecoder().decode(JSONValue.self, from: Data(text.utf8))
    }

    @Test(arguments: [
        #"{"a":[1,-2,3.5,-0.25e2,1E3,0,true,false,null,"x"],"b":{"c":{}},"d":[]}"#,
        #"  {"k" : "v" , "e":"\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00"}  "#,
        #"[12345678901234567, 9223372036854775807, 18446744073709551616, 1.0]"#,
        #""just a string""#, "42", "true", "null",
    ])
    func matchesJSONDecoder(text: String) throws {
        #expect(try JSONValue.parse(Array(text.utf8)) == reference(text))
    }

    @Test(arguments: [
        "", " ", "{", "[1,]", #"{"a":1,}"#, "01", "-", "1.", ".5", "1e", "+1", "tru", "nul", #""unterminated"#,
        "\"tab\there\"", #""\x""#, #""\u12""#, #""\ud800""#, #""\udc00""#, "[1] 2", "{1:2}", "NaN", "1e999",
        #"{"dup":1,"dup":2}"#,
    ])
    func refusesWhatRFC8259Refuses(text: String) {
        #expect(throws: (any Error).self) { try JSONValue.parse(Array(text.utf8)) }
    }

    @Test func refusesInvalidUTF8AndDeepNesting() {
        #expect(throws: (any Error).self) { try JSONValue.parse([0x22, 0xFF, 0x22]) }
        let deep = String(repeating: "[", count: 300) + String(repeating: "]", count: 300)
        #expect(throws: (any Error).self) { try JSONValue.parse(Array(deep.utf8)) }
        let fine = String(repeating: "[", count: 200) + String(repeating: "]", count: 200)
        #expect(throws: Never.self) { try JSONValue.parse(Array(fine.utf8)) }
    }

    private func parse(_ text: String) throws(JSONParser.SyntaxError) -> JSONValue { try JSONParser.parse(Array(text.utf8)) }

    /// A value of up to `depth` levels from `seed`, whose objects reuse a few keys at every level
    /// (an inner object's members must not join its parent's) and two spellings of one name.
    private func value(_ rng: inout SplitMix, depth: Int) -> JSONValue {
        let keys: [Identifier] = ["a", "b", "id", "Zo\u{00EB}", "Zoe\u{0308}", "x"]
        switch depth == 0 ? rng.next() % 4 : rng.next() % 6 {
        case 0: return .string(["", "é", "q\"\\\n\u{1}", "1611147600000"][Int(rng.next() % 4)])
        case 1:
            let n = Int64(bitPattern: rng.next()) >> Int64(rng.next() % 64)
            return .number(Double(n), text: String(n))
        case 2: return .bool(rng.next() % 2 == 0)
        case 3: return .null
        case 4: return .array((0..<Int(rng.next() % 4)).map { _ in value(&rng, depth: depth - 1) })
        default:
            var members: [Identifier: JSONValue] = [:]
            for key in keys where rng.next() % 2 == 0 { members[key] = value(&rng, depth: depth - 1) }
            return .object(members)
        }
    }

    @Test func whatIsWrittenReadsBackTheSame() throws {
        var rng = SplitMix(seed: 62)
        for _ in 0..<2_000 {
            let v = value(&rng, depth: 4)
            #expect(try JSONParser.parse(v.jsonBytes) == v)
        }
    }

    @Test func membersBelongToTheirOwnObject() throws {
        let v = try parse(#"{"a":{"a":{"a":1,"b":2},"b":[{"a":3},{}]},"b":{} , "c" : [ ] }"#)
        #expect(
            v
                == .object([
                    "a": .object([
                        "a": .object(["a": .number(1, text: "1"), "b": .number(2, text: "2")]),
                        "b": .array([.object(["a": .number(3, text: "3")]), .object([:])]),
                    ]),
                    "b": .object([:]), "c": .array([]),
                ]))
    }

    /// The same bytes twice is refused, said at the second one's value; canonically equivalent
    /// spellings are two names.
    @Test func aKeyTwiceIsRefusedWhereItsSecondValueIs() throws {
        #expect(throws: JSONParser.SyntaxError(offset: 23, reason: "duplicate key")) {
            try parse(#"{"a":1,"b":{"a":2},"a":3}"#)
        }
        #expect(throws: JSONParser.SyntaxError(offset: 28, reason: "duplicate key")) {
            try parse(#"{"k":[{"x":1,"y":{"x":2,"x":3}}]}"#)
        }
        let both = try parse("{\"Zo\u{00EB}\":1,\"Zoe\u{0308}\":2}")
        #expect(both["Zo\u{00EB}"] == .number(1, text: "1") && both["Zoe\u{0308}"] == .number(2, text: "2"))
        guard case .object(let members) = both else { return }
        #expect(members.count == 2)
    }

    @Test func strictness() {
        let refused: [(String, Int, String)] = [
            (#"{"a":1,}"#, 7, "expected a key"),
            (#"{"a" 1}"#, 5, "expected ':'"),
            (#"{"a":1 "b":2}"#, 7, "expected ',' or '}'"),
            (#"[1,]"#, 3, "unexpected byte"),
            (#"{"a":01}"#, 6, "leading zero"),
            (#"{"a":1}x"#, 7, "bytes after the value"),
            (#"{"a":"#, 5, "unexpected end"),
        ]
        for (text, offset, reason) in refused {
            #expect(throws: JSONParser.SyntaxError(offset: offset, reason: reason), "\(text)") { try parse(text) }
        }
        let deep =
            String(repeating: "{\"a\":", count: JSONParser.maxDepth + 1) + "1"
            + String(repeating: "}", count: JSONParser.maxDepth + 1)
        #expect(throws: JSONParser.SyntaxError.self) { try parse(deep) }
        let deepest =
            String(repeating: "{\"a\":", count: JSONParser.maxDepth) + "1"
            + String(repeating: "}", count: JSONParser.maxDepth)
        #expect((try? parse(deepest)) != nil)
    }
}

/// Member names are exact bytes. Canonically equivalent names are two members; the same
/// bytes twice is still refused as ambiguous.
@Suite struct JSONMemberNameTests {
    @Test func equivalentSpellingsAreTwoMembers() throws {
        let v = try JSONValue.parse(Array(#"{"\u00e9":1,"e\u0301":2,"Zo\#u{EB}":3,"Zoe\#u{308}":4}"#.utf8))
        guard case .object(let members) = v else {
            Issue.record("not an object")
            return
        }
        #expect(members.count == 4)
        #expect(v["\u{00E9}"]?.int64 == 1 && v["e\u{0301}"]?.int64 == 2)
        #expect(v["Zo\u{EB}"]?.int64 == 3 && v["Zoe\u{308}"]?.int64 == 4)
        // Written back sorted by bytes, each name as it was.
        let again = try JSONValue.parse(v.jsonBytes)
        #expect(again == v)
    }

    @Test func theSameBytesTwiceAreRefused() {
        #expect(throws: (any Error).self) { try JSONValue.parse(Array(#"{"\u00e9":1,"\u00e9":2}"#.utf8)) }
        #expect(throws: (any Error).self) { try JSONValue.parse(Array(#"{"\u00e9":1,"é":2}"#.utf8)) }
    }
}

/// A seeded generator (SplitMix64), so a failure is found again.
struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
