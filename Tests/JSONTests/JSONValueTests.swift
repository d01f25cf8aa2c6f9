import Foundation
import Testing

@testable import JSON

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

extension JSONValueWritingTests {
    /// The fast writers give the bytes the plain ones do: keys sorted by bytes, escapes and all.
    @Test func objectsOfOneShapeAndAnAddedMemberAreWrittenAsUsual() throws {
        let keys = ["period", "paying_10", "paying_2", "Zoe\u{308}", "\u{00E9}", "a\"b", "n"]
        let cells: [[JSONValue]] = (0..<4).map { i in
            keys.indices.map { k in
                switch (i + k) % 4 {
                case 0: .null
                case 1: .int(i * 1000 - k)
                case 2: .string("v\n\(i)")
                default: .array([.bool(true), .object(strings: ["x": .int(1), "a": .null])])
                }
            }
        }
        let plain = JSONValue.array(
            cells.map { row in .object(strings: Dictionary(uniqueKeysWithValues: zip(keys, row))) }
        ).jsonBytes
        #expect(
            Self.written { $0.arrayOfObjects(keys: keys, count: cells.count) { i, k, out in out.value(cells[i][k]) } } == plain)
        #expect(
            Self.written { $0.arrayOfObjects(keys: keys, count: 0) { i, k, out in out.value(cells[i][k]) } } == Array("[]".utf8))

        // Members left out where `present` says so, the first of an object included (no comma
        // before the first written: "Zoe\u{308}" sorts first), and an object with none: the bytes
        // of objects without them.
        for absent in [{ (i: Int, k: Int) in (i + k) % 3 == 0 }, { i, _ in i == 2 }, { _, k in k == 3 || k == 4 }] {
            let fewer = JSONValue.array(
                cells.enumerated().map { i, row in
                    .object(
                        strings: Dictionary(
                            uniqueKeysWithValues: zip(keys, row).enumerated().filter { !absent(i, $0.offset) }.map(\.element)))
                }
            ).jsonBytes
            let written = Self.written {
                $0.arrayOfObjects(keys: keys, count: cells.count, present: { !absent($0, $1) }) { i, k, out in
                    out.value(cells[i][k])
                }
            }
            #expect(written == fewer, "\(String(decoding: written, as: UTF8.self))")
        }

        // The member added in its place among the others', over one of the same name.
        let outer = JSONValue.object(strings: ["chart": .string("mrr"), "zz": .int(1), "values": .int(9)])
        let added = outer.jsonBytes(adding: "values", capacity: 0) { out in
            out.arrayOfObjects(keys: keys, count: cells.count) { i, k, out in out.value(cells[i][k]) }
        }
        var expected = outer
        if case .object(var members) = outer {
            members[Identifier("values")] = try JSONValue.parse(plain)
            expected = .object(members)
        }
        #expect(added == expected.jsonBytes)
        #expect(JSONValue.int(3).jsonBytes(adding: "values", capacity: 0) { $0.int(4) } == Array("3".utf8))

        // Several members added, objects and arrays written straight in: the tree's bytes.
        let groups: JSONValue = .array([
            .object(strings: ["group": .string("DEU"), "values": try JSONValue.parse(plain)]),
            .object(strings: ["group": .string("a\"b"), "values": .array([])]),
        ])
        let several = outer.jsonBytes(
            adding: [
                ("values", { $0.int(2) }),
                (
                    "groups",
                    { out in
                        out.array(count: 2) { n, out in
                            out.object([
                                ("values", { n == 0 ? $0.value(try! JSONValue.parse(plain)) : $0.array(count: 0) { _, _ in } }),
                                ("group", { $0.string(n == 0 ? "DEU" : "a\"b") }),
                            ])
                        }
                    }
                ),
            ], capacity: 0)
        if case .object(var members) = outer {
            members[Identifier("values")] = .int(2)
            members[Identifier("groups")] = groups
            #expect(several == JSONValue.object(members).jsonBytes)
        }
        // The size to reserve is enough for values of the length said.
        let size = JSONOutput.arrayOfObjectsSize(keys: keys, count: 3, valueBytes: 4)
        #expect(size >= Self.written { $0.arrayOfObjects(keys: keys, count: 3) { _, _, out in out.int(1234) } }.count)
    }

    /// What `write` writes, alone: the value of the one member added to an empty object.
    static func written(_ write: (inout JSONOutput) -> Void) -> [UInt8] {
        let bytes = JSONValue.object([:]).jsonBytes(adding: "x", capacity: 0, write: write)
        return Array(bytes.dropFirst(#"{"x":"#.utf8.count).dropLast())
    }

    /// Values written straight into the bytes are the values' own bytes: integers at every width
    /// and both ends, strings with escapes, null.
    @Test func valuesWrittenStraightAreTheValuesBytes() {
        var numbers: [Int64] = [0, 1, -1, 9, 10, -10, 99, 100, .max, .min, .max - 1, .min + 1]
        var power: Int64 = 1
        for _ in 0..<18 {
            power *= 10
            numbers += [power - 1, power, power + 1, -power]
        }
        let strings = ["", "plain", "a\"b\\c\n\u{0007}", "\u{00E9}"]
        // Each string twice: from a String, then from its UTF-8 bytes (a figure made on the stack).
        let cells: [JSONValue] = numbers.map { .int($0) } + (strings + strings).map(JSONValue.string) + [.null]
        let written = Self.written {
            $0.arrayOfObjects(keys: ["v"], count: cells.count) { i, _, out in
                if i < numbers.count {
                    out.int(numbers[i])
                } else if i < numbers.count + strings.count {
                    out.string(strings[i - numbers.count])
                } else if i < numbers.count + 2 * strings.count {
                    let utf8 = Array(strings[i - numbers.count - strings.count].utf8)
                    utf8.withUnsafeBufferPointer { out.string(utf8: $0) }
                } else {
                    out.null()
                }
            }
        }
        #expect(written == JSONValue.array(cells.map { .object(strings: ["v": $0]) }).jsonBytes)
        #expect(String(decoding: written, as: UTF8.self).contains(#"{"v":-9223372036854775808}"#))
    }
}

extension JSONOutput {
    /// Objects of one shape written with ``JSONOutput/MemberNames`` as the charts write their
    /// periods: object `i`'s member `keys[k]` by `write(i, k, &out)`, where `present(i, k)`.
    fileprivate mutating func arrayOfObjects(
        keys: [String], count: Int, present: ((_ object: Int, _ key: Int) -> Bool)? = nil,
        write: (_ object: Int, _ key: Int, _ out: inout JSONOutput) -> Void
    ) {
        let names = MemberNames(keys)
        startArray()
        for i in 0..<count {
            startObject(first: i == 0)
            var written = false
            for (n, k) in names.order.enumerated() {
                if let present, !present(i, k) { continue }
                member(n, of: names, first: !written)
                written = true
                write(i, k, &self)
            }
            endObject()
        }
        endArray()
    }
}
