import Identifiers

/// A direct RFC 8259 parser into `JSONValue`. JSONDecoder's generic path (try each type in turn,
/// throwing on every miss) cost a third of a POST's CPU on Apple's answers; this reads each byte
/// once. Strict: one value, no trailing commas, no leading zeros, no duplicate keys, no control
/// bytes or invalid UTF-8 in strings, no lone surrogates; nesting deeper than `maxDepth` is refused.
struct JSONParser {
    struct SyntaxError: Error, Equatable, CustomStringConvertible {
        let offset: Int
        let reason: String
        var description: String { "invalid JSON at byte \(offset): \(reason)" }
    }

    static let maxDepth = 256

    private let b: UnsafeBufferPointer<UInt8>
    private var i = 0
    private var depth = 0
    /// The members read so far of the objects being read, each with the offset of its value.
    private var pending: [(key: Identifier, value: JSONValue, at: Int)] = []

    private init(_ bytes: UnsafeBufferPointer<UInt8>) { b = bytes }

    static func parse(_ bytes: [UInt8]) throws(SyntaxError) -> JSONValue {
        try bytes.withUnsafeBufferPointer { (buffer) throws(SyntaxError) -> JSONValue in
            var parser = JSONParser(buffer)
            parser.skipWhitespace()
            let value = try parser.value()
            parser.skipWhitespace()
            guard parser.i == buffer.count else { throw parser.error("bytes after the value") }
            return value
        }
    }

    private func error(_ reason: String) -> SyntaxError { SyntaxError(offset: i, reason: reason) }

    private mutating func skipWhitespace() {
        while i < b.count, b[i] == 0x20 || b[i] == 0x0A || b[i] == 0x0D || b[i] == 0x09 { i += 1 }
    }

    private mutating func value() throws(SyntaxError) -> JSONValue {
        guard i < b.count else { throw error("unexpected end") }
        switch b[i] {
        case UInt8(ascii: "{"): return try object()
        case UInt8(ascii: "["): return try array()
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"):
            try literal("true")
            return .bool(true)
        case UInt8(ascii: "f"):
            try literal("false")
            return .bool(false)
        case UInt8(ascii: "n"):
            try literal("null")
            return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try number()
        default: throw error("unexpected byte")
        }
    }

    private mutating func literal(_ word: StaticString) throws(SyntaxError) {
        let n = word.utf8CodeUnitCount
        guard b.count - i >= n else { throw error("unexpected end") }
        for k in 0..<n where b[i + k] != word.utf8Start[k] { throw error("unknown literal") }
        i += n
    }

    private mutating func object() throws(SyntaxError) -> JSONValue {
        depth += 1
        guard depth <= Self.maxDepth else { throw error("nested too deeply") }
        defer { depth -= 1 }
        i += 1
        skipWhitespace()
        if i < b.count, b[i] == UInt8(ascii: "}") {
            i += 1
            return .object([:])
        }
        // The members go on `pending` (shared by every object being read, the inner ones above
        // the outer's) and into a dictionary made once at the closing brace, of their number:
        // built member by member it grew and rehashed five times for an Apple transaction's thirty.
        let base = pending.count
        defer { pending.removeLast(pending.count - base) }
        while true {
            guard i < b.count, b[i] == UInt8(ascii: "\"") else { throw error("expected a key") }
            let key = Identifier(try string())
            skipWhitespace()
            guard i < b.count, b[i] == UInt8(ascii: ":") else { throw error("expected ':'") }
            i += 1
            skipWhitespace()
            let at = i
            pending.append((key, try value(), at))
            skipWhitespace()
            guard i < b.count else { throw error("unexpected end") }
            if b[i] == UInt8(ascii: ",") {
                i += 1
                skipWhitespace()
            } else if b[i] == UInt8(ascii: "}") {
                i += 1
                var members = [Identifier: JSONValue](minimumCapacity: pending.count - base)
                for (key, value, at) in pending[base...] {
                    // The same bytes twice is ambiguous and refused (as JSONDecoder does); canonically
                    // equivalent spellings are different names (Identifier).
                    guard members.updateValue(value, forKey: key) == nil else {
                        throw SyntaxError(offset: at, reason: "duplicate key")
                    }
                }
                return .object(members)
            } else {
                throw error("expected ',' or '}'")
            }
        }
    }

    private mutating func array() throws(SyntaxError) -> JSONValue {
        depth += 1
        guard depth <= Self.maxDepth else { throw error("nested too deeply") }
        defer { depth -= 1 }
        i += 1
        var items: [JSONValue] = []
        skipWhitespace()
        if i < b.count, b[i] == UInt8(ascii: "]") {
            i += 1
            return .array(items)
        }
        while true {
            items.append(try value())
            skipWhitespace()
            guard i < b.count else { throw error("unexpected end") }
            if b[i] == UInt8(ascii: ",") {
                i += 1
                skipWhitespace()
            } else if b[i] == UInt8(ascii: "]") {
                i += 1
                return .array(items)
            } else {
                throw error("expected ',' or ']'")
            }
        }
    }

    private mutating func string() throws(SyntaxError) -> String {
        i += 1
        let start = i
        // Fast path: no escapes.
        while i < b.count, b[i] != UInt8(ascii: "\""), b[i] != UInt8(ascii: "\\"), b[i] >= 0x20 { i += 1 }
        guard i < b.count else { throw error("unterminated string") }
        if b[i] == UInt8(ascii: "\"") {
            guard let s = String(validating: UnsafeBufferPointer(rebasing: b[start..<i]), as: UTF8.self) else {
                throw error("invalid UTF-8")
            }
            i += 1
            return s
        }
        var bytes = Array(b[start..<i])
        while true {
            guard i < b.count else { throw error("unterminated string") }
            let c = b[i]
            if c == UInt8(ascii: "\"") {
                i += 1
                guard let s = String(validating: bytes, as: UTF8.self) else { throw error("invalid UTF-8") }
                return s
            }
            guard c >= 0x20 else { throw error("control byte in a string") }
            if c != UInt8(ascii: "\\") {
                bytes.append(c)
                i += 1
                continue
            }
            guard i + 1 < b.count else { throw error("unterminated escape") }
            let e = b[i + 1]
            i += 2
            switch e {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): bytes.append(e)
            case UInt8(ascii: "b"): bytes.append(0x08)
            case UInt8(ascii: "f"): bytes.append(0x0C)
            case UInt8(ascii: "n"): bytes.append(0x0A)
            case UInt8(ascii: "r"): bytes.append(0x0D)
            case UInt8(ascii: "t"): bytes.append(0x09)
            case UInt8(ascii: "u"):
                var scalar = try hex4()
                if (0xD800...0xDBFF).contains(scalar) {
                    guard b.count - i >= 6, b[i] == UInt8(ascii: "\\"), b[i + 1] == UInt8(ascii: "u") else {
                        throw error("lone surrogate")
                    }
                    i += 2
                    let low = try hex4()
                    guard (0xDC00...0xDFFF).contains(low) else { throw error("lone surrogate") }
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                } else if (0xDC00...0xDFFF).contains(scalar) {
                    throw error("lone surrogate")
                }
                bytes.append(contentsOf: String(Character(Unicode.Scalar(scalar)!)).utf8)
            default:
                throw error("unknown escape")
            }
        }
    }

    private mutating func hex4() throws(SyntaxError) -> UInt32 {
        guard b.count - i >= 4 else { throw error("short \\u escape") }
        var v: UInt32 = 0
        for _ in 0..<4 {
            let c = b[i]
            let d: UInt32
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): d = UInt32(c - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): d = UInt32(c - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): d = UInt32(c - UInt8(ascii: "A") + 10)
            default: throw error("bad \\u escape")
            }
            v = v << 4 | d
            i += 1
        }
        return v
    }

    private mutating func number() throws(SyntaxError) -> JSONValue {
        let start = i
        if b[i] == UInt8(ascii: "-") { i += 1 }
        guard i < b.count, isDigit(b[i]) else { throw error("expected a digit") }
        if b[i] == UInt8(ascii: "0") {
            i += 1
            if i < b.count, isDigit(b[i]) { throw error("leading zero") }
        } else {
            while i < b.count, isDigit(b[i]) { i += 1 }
        }
        var integral = true
        if i < b.count, b[i] == UInt8(ascii: ".") {
            integral = false
            i += 1
            guard i < b.count, isDigit(b[i]) else { throw error("expected a digit after '.'") }
            while i < b.count, isDigit(b[i]) { i += 1 }
        }
        if i < b.count, b[i] == UInt8(ascii: "e") || b[i] == UInt8(ascii: "E") {
            integral = false
            i += 1
            if i < b.count, b[i] == UInt8(ascii: "+") || b[i] == UInt8(ascii: "-") { i += 1 }
            guard i < b.count, isDigit(b[i]) else { throw error("expected an exponent") }
            while i < b.count, isDigit(b[i]) { i += 1 }
        }
        let text = String(decoding: UnsafeBufferPointer(rebasing: b[start..<i]), as: UTF8.self)
        if integral, let n = Int64(text) { return .number(Double(n), text: String(n)) }
        guard let d = Double(text), d.isFinite else { throw error("number out of range") }
        // As JSONDecoder reads them: a whole value that fits Int64 (`1.0`, `1E3`) is an integer.
        if let n = Int64(exactly: d) { return .number(d, text: String(n)) }
        return .number(d, text: String(d))
    }

    @inline(__always) private func isDigit(_ c: UInt8) -> Bool { c >= UInt8(ascii: "0") && c <= UInt8(ascii: "9") }
}
