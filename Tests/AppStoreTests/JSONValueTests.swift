import Testing

@testable import AppStore

@Suite("JSON value")
struct JSONValueTests {
    @Test func readsStringsNumbersAndFlagsTolerantly() throws {
        let v = try JSONValue.parse(
            Array(
                #"{"ms":"1611147600000","n":1611147600000,"t":"true","one":"1","b":false,"z":0,"id":12345678901234567,"e":""}"#
                    .utf8))
        #expect(v["ms"]?.int64 == 1_611_147_600_000)
        #expect(v["n"]?.int64 == 1_611_147_600_000)
        #expect(v["id"]?.string == "12345678901234567")
        #expect(v["t"]?.bool == true)
        #expect(v["one"]?.bool == true)
        #expect(v["b"]?.bool == false)
        #expect(v["z"]?.bool == false)
        #expect(v["e"]?.string == nil)
        #expect(v["missing"] == nil)
        #expect(v["t"]?.int64 == nil)
    }

    @Test func encodesCanonicallyAndKeepsLargeIntegers() throws {
        let text = #"{"b":[1,"2",null,true],"a":12345678901234567}"#
        let v = try JSONValue.parse(Array(text.utf8))
        #expect(String(decoding: v.jsonBytes, as: UTF8.self) == #"{"a":12345678901234567,"b":[1,"2",null,true]}"#)
        #expect(try JSONValue.parse(v.jsonBytes) == v)
    }
}

@Suite("JSON value writing")
struct JSONValueWritingTests {
    @Test func escapesWhatJSONRequiresAndRoundTrips() throws {
        let tricky = "quote \" backslash \\ slash / nl \n cr \r tab \t bell \u{07} nul \u{00} é 😀"
        let v = JSONValue.object(["s": .string(tricky), "n": .null, "a": .array([.bool(true), .number(1.5, text: "1.5")])])
        let text = String(decoding: v.jsonBytes, as: UTF8.self)
        #expect(
            text.hasPrefix(
                #"{"a":[true,1.5],"n":null,"s":"quote \" backslash \\ slash / nl \n cr \r tab \t bell \u0007 nul \u0000"#))
        #expect(try JSONValue.parse(v.jsonBytes) == v)
    }
}
