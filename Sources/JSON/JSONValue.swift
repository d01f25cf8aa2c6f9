import FoundationEssentials
@_exported import Identifiers

/// Any JSON value, kept as Apple sent it, with tolerant typed reads: Apple sends most numbers and
/// booleans as strings (`"1611147600000"`, `"true"`, `"1"`) and some identifiers as numbers
/// (Docs/apple-protocols.md §1.4), and fields come and go.
public enum JSONValue: Sendable, Equatable, Decodable {
    case null
    case bool(Bool)
    case number(Double, text: String)
    case string(String)
    case array([JSONValue])
    /// Members by their exact names: `"\u00e9"` and `"e\u0301"` are two members (Identifier).
    case object([Identifier: JSONValue])

    /// Decoding through JSONDecoder: kept as the reference the tests compare `JSONParser` with.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        if c.decodeNil() {
            self = .null
        } else if let v = try? c.decode(Bool.self) {
            self = .bool(v)
        } else if let v = try? c.decode(Int64.self) {
            // Integers keep every digit (a Double would round 64-bit ids).
            self = .number(Double(v), text: String(v))
        } else if let v = try? c.decode(Double.self) {
            self = .number(v, text: String(v))
        } else if let v = try? c.decode(String.self) {
            self = .string(v)
        } else if let v = try? c.decode([JSONValue].self) {
            self = .array(v)
        } else {
            self = .object(strings: try c.decode([String: JSONValue].self))
        }
    }

    /// An integer, its digits kept exactly.
    public static func int(_ value: some BinaryInteger) -> JSONValue {
        .number(Double(value), text: String(value))
    }

    /// Parses JSON bytes (RFC 8259, strict; see `JSONParser`).
    public static func parse(_ bytes: [UInt8]) throws -> JSONValue {
        try JSONParser.parse(bytes)
    }

    /// Compact JSON with sorted keys: the same value always gives the same bytes. Written
    /// directly (JSONEncoder's generic machinery cost most of a subscriber request's CPU).
    public var jsonBytes: [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(256)
        write(into: &out)
        return out
    }

    fileprivate func write(into out: inout [UInt8]) {
        switch self {
        case .null: out.append(contentsOf: "null".utf8)
        case .bool(let b): out.append(contentsOf: (b ? "true" : "false").utf8)
        case .number(let v, let text):
            // Integers keep their digits; other numbers (always finite when parsed) print as Double.
            out.append(contentsOf: (Int64(text) != nil ? text : v.isFinite ? String(v) : "null").utf8)
        case .string(let s): Self.writeString(s, into: &out)
        case .array(let items):
            out.append(UInt8(ascii: "["))
            for (i, item) in items.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                item.write(into: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let members):
            out.append(UInt8(ascii: "{"))
            for (i, member) in members.sorted(by: { $0.key < $1.key }).enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                Self.writeString(member.key.string, into: &out)
                out.append(UInt8(ascii: ":"))
                member.value.write(into: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    /// This object's bytes with one more member, `key`, whose value `write` writes straight into
    /// them (in place of a member of that name, if any), in one buffer of about `capacity` bytes:
    /// a chart's twenty megabytes of periods are written once, not written and then copied in.
    public func jsonBytes(adding key: String, capacity: Int, write: (inout JSONOutput) -> Void) -> [UInt8] {
        withoutActuallyEscaping(write) { jsonBytes(adding: [(key, $0)], capacity: capacity) }
    }

    /// ``jsonBytes(adding:capacity:write:)`` with several members written straight in.
    public func jsonBytes(adding added: [(String, (inout JSONOutput) -> Void)], capacity: Int) -> [UInt8] {
        guard case .object(let members) = self else { return jsonBytes }
        var out = JSONOutput(capacity: capacity + 256)
        out.object(
            members.filter { member in !added.contains { Identifier($0.0) == member.key } }.map { member in
                (member.key.string, { (out: inout JSONOutput) in member.value.write(into: &out.bytes) })
            } + added)
        return out.bytes
    }

    /// A JSON string (RFC 8259 §7): quote, backslash and control bytes escaped, the rest as UTF-8.
    fileprivate static func writeString(_ s: String, into out: inout [UInt8]) { writeString(utf8: s.utf8, into: &out) }

    /// ``writeString(_:into:)`` of a string's UTF-8 bytes, wherever they are.
    fileprivate static func writeString(utf8: some Collection<UInt8>, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        // Most strings (ids, dates, names, figures) need no escape: copied whole.
        if !utf8.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) {
            out.append(contentsOf: utf8)
            out.append(UInt8(ascii: "\""))
            return
        }
        for byte in utf8 {
            switch byte {
            case UInt8(ascii: "\""): out.append(contentsOf: "\\\"".utf8)
            case UInt8(ascii: "\\"): out.append(contentsOf: "\\\\".utf8)
            case 0x0A: out.append(contentsOf: "\\n".utf8)
            case 0x0D: out.append(contentsOf: "\\r".utf8)
            case 0x09: out.append(contentsOf: "\\t".utf8)
            case 0..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                out.append(contentsOf: "\\u00".utf8)
                out.append(hex[Int(byte >> 4)])
                out.append(hex[Int(byte & 0xF)])
            default: out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
    }

    /// An object from a `String`-keyed dictionary (Codable, logger metadata). Its keys are already
    /// distinct under canonical equivalence, so distinct as bytes too.
    public static func object(strings members: [String: JSONValue]) -> JSONValue {
        .object(Dictionary(members.map { (Identifier($0.key), $0.value) }, uniquingKeysWith: { a, _ in a }))
    }

    public subscript(key: String) -> JSONValue? {
        if case .object(let members) = self { return members[Identifier(key)] }
        return nil
    }

    /// A non-empty string, or a number's digits.
    public var string: String? {
        switch self {
        case .string(let s): s.isEmpty ? nil : s
        case .number(_, let text): text
        default: nil
        }
    }

    /// An integer from a number or a string of digits (`"1611147600000"`).
    public var int64: Int64? {
        switch self {
        case .number(let v, let text): Int64(text) ?? Int64(exactly: v)
        case .string(let s): Int64(s.trimmingWhitespace())
        default: nil
        }
    }

    /// `true`/`false`, `1`/`0`, `"true"`/`"false"`, `"1"`/`"0"`.
    public var bool: Bool? {
        switch self {
        case .bool(let b): return b
        case .number(let v, _): return v == 1 ? true : v == 0 ? false : nil
        case .string(let s):
            switch s.trimmingWhitespace().lowercased() {
            case "true", "1": return true
            case "false", "0": return false
            default: return nil
            }
        default: return nil
        }
    }

    public var array: [JSONValue]? {
        if case .array(let items) = self { return items }
        return nil
    }
}

extension String {
    fileprivate func trimmingWhitespace() -> Substring {
        var s = self[...]
        while s.first?.isWhitespace == true { s = s.dropFirst() }
        while s.last?.isWhitespace == true { s = s.dropLast() }
        return s
    }
}

/// JSON being written, a value at a time (``JSONValue/jsonBytes(adding:capacity:write:)``).
public struct JSONOutput {
    public fileprivate(set) var bytes: [UInt8] = []

    init(capacity: Int) { bytes.reserveCapacity(capacity) }

    /// The members' names of objects of one shape, sorted as ``JSONValue`` writes them, each
    /// quoted with its colon and ready to copy: what a writer of many such objects looks up once
    /// (a chart's periods: 730 objects of up to 1,463 members), then writes each object with
    /// ``startObject(first:)``, ``member(_:of:first:)`` and its values, and ``endObject()``: the
    /// bytes `.array(objects)` would write, the keys sorted once instead of per object.
    public struct MemberNames: Sendable {
        /// The keys' indices in the order they are written.
        public let order: [Int]
        /// Every name, quoted, with its colon (and, but for the first, the comma before it), in
        /// one run of bytes: the `n`th written's are `names[ends[n - 1]..<ends[n]]`.
        let names: [UInt8]
        let ends: [Int]

        public init(_ keys: [String]) {
            order = keys.indices.sorted { Identifier(keys[$0]) < Identifier(keys[$1]) }
            var (names, ends) = ([UInt8](), [Int]())
            for (n, k) in order.enumerated() {
                if n > 0 { names.append(UInt8(ascii: ",")) }
                JSONValue.writeString(keys[k], into: &names)
                names.append(UInt8(ascii: ":"))
                ends.append(names.count)
            }
            (self.names, self.ends) = (names, ends)
        }
    }

    public mutating func startArray() { bytes.append(UInt8(ascii: "[")) }

    public mutating func endArray() { bytes.append(UInt8(ascii: "]")) }

    /// An object's opening brace, after a comma unless it is an array's first element.
    public mutating func startObject(first: Bool) { bytes.append(contentsOf: first ? "{".utf8 : ",{".utf8) }

    public mutating func endObject() { bytes.append(UInt8(ascii: "}")) }

    /// The name of the `n`th member of `names`' order, with its colon, after a comma unless it is
    /// the object's first: its value comes next.
    public mutating func member(_ n: Int, of names: borrowing MemberNames, first: Bool) {
        let start = n == 0 ? 0 : names.ends[n - 1] + (first ? 1 : 0)
        names.names.withUnsafeBufferPointer { bytes.append(contentsOf: UnsafeBufferPointer(rebasing: $0[start..<names.ends[n]])) }
    }

    /// What an array of `count` objects with `keys` (``MemberNames``) takes, with each value about
    /// `valueBytes` long: room to reserve (a key of a quote or two included).
    public static func arrayOfObjectsSize(keys: [String], count: Int, valueBytes: Int) -> Int {
        count * keys.reduce(2) { $0 + $1.utf8.count + 6 + valueBytes } + 2
    }

    public mutating func value(_ v: JSONValue) { v.write(into: &bytes) }

    /// An object of these members, in key order (as ``JSONValue`` writes one), each member's
    /// value written straight in by its function.
    public mutating func object(_ members: [(String, (inout JSONOutput) -> Void)]) {
        bytes.append(UInt8(ascii: "{"))
        for (n, (key, write)) in members.sorted(by: { Identifier($0.0) < Identifier($1.0) }).enumerated() {
            if n > 0 { bytes.append(UInt8(ascii: ",")) }
            JSONValue.writeString(key, into: &bytes)
            bytes.append(UInt8(ascii: ":"))
            write(&self)
        }
        bytes.append(UInt8(ascii: "}"))
    }

    /// An array of `count` values, `write(i, &out)` writing the `i`th.
    public mutating func array(count: Int, write: (_ element: Int, _ out: inout JSONOutput) -> Void) {
        bytes.append(UInt8(ascii: "["))
        for i in 0..<count {
            if i > 0 { bytes.append(UInt8(ascii: ",")) }
            write(i, &self)
        }
        bytes.append(UInt8(ascii: "]"))
    }

    public mutating func string(_ s: String) { JSONValue.writeString(s, into: &bytes) }

    /// A string of these UTF-8 bytes (a figure made on the stack), as ``string(_:)`` writes it.
    public mutating func string(utf8: UnsafeBufferPointer<UInt8>) { JSONValue.writeString(utf8: utf8, into: &bytes) }

    public mutating func null() { bytes.append(contentsOf: "null".utf8) }

    /// An integer's decimal digits, as `.int(n)` writes them.
    public mutating func int(_ n: Int64) {
        if n < 0 { bytes.append(UInt8(ascii: "-")) }
        var magnitude = n.magnitude  // at most 9,223,372,036,854,775,808: 19 digits
        var (width, power): (Int, UInt64) = (1, 10)
        while width < 19, magnitude >= power {
            width += 1
            power *= 10
        }
        let end = bytes.count + width
        bytes.append(contentsOf: repeatElement(UInt8(ascii: "0"), count: width))
        for i in stride(from: end - 1, through: end - width, by: -1) {
            bytes[i] = UInt8(ascii: "0") + UInt8(magnitude % 10)
            magnitude /= 10
        }
    }
}
