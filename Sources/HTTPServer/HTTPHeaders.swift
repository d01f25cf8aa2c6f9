/// Header fields in the order received. Names compare case-insensitively (RFC 9110 §5.1);
/// repeated fields are kept as separate entries.
public struct HTTPHeaders: Sendable, Sequence, ExpressibleByDictionaryLiteral, Equatable {
    /// One field line.
    public struct Field: Sendable, Equatable {
        public var name: String
        public var value: String
        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    public private(set) var fields: [Field] = []

    public init() {}
    public init(dictionaryLiteral elements: (String, String)...) {
        fields = elements.map { Field(name: $0.0, value: $0.1) }
    }

    public var count: Int { fields.count }
    public func makeIterator() -> IndexingIterator<[Field]> { fields.makeIterator() }

    /// Appends a field, keeping any with the same name.
    public mutating func add(name: String, value: String) {
        fields.append(Field(name: name, value: value))
    }

    /// Replaces every field named `name` with one field.
    public mutating func replaceOrAdd(name: String, value: String) {
        remove(name: name)
        fields.append(Field(name: name, value: value))
    }

    /// Removes every field named `name`.
    public mutating func remove(name: String) {
        fields.removeAll { Self.namesEqual($0.name, name) }
    }

    /// The first value of `name`, if any.
    public subscript(first name: String) -> String? {
        fields.first { Self.namesEqual($0.name, name) }?.value
    }

    /// Every value of `name`, in order.
    public subscript(all name: String) -> [String] {
        fields.filter { Self.namesEqual($0.name, name) }.map(\.value)
    }

    /// Whether any field is named `name`.
    public func contains(_ name: String) -> Bool {
        fields.contains { Self.namesEqual($0.name, name) }
    }

    /// Whether a comma-separated field `name` lists `token` (case-insensitive), e.g. `Connection: close`.
    public func containsToken(_ token: String, in name: String) -> Bool {
        for value in self[all: name] where value.httpListElements().contains(where: { Self.namesEqual($0, token) }) {
            return true
        }
        return false
    }

    /// Whether `Content-Type` names the media type `type` (case-insensitive, parameters ignored).
    public func hasMediaType(_ type: String) -> Bool {
        guard let value = self[first: "Content-Type"] else { return false }
        let semicolon = value.utf8.firstIndex(of: UInt8(ascii: ";")) ?? value.endIndex
        return Self.namesEqual(value[..<semicolon].trimmingASCIIWhitespace(), type)
    }

    /// ASCII case-insensitive comparison, without allocating.
    @inline(__always)
    static func namesEqual<A: StringProtocol, B: StringProtocol>(_ a: A, _ b: B) -> Bool {
        let au = a.utf8
        let bu = b.utf8
        guard au.count == bu.count else { return false }
        // Over the bytes a native string keeps (a generic walk of two views was a tenth of a GET's
        // header lookups); any other view is walked.
        let fast = au.withContiguousStorageIfAvailable { x in
            bu.withContiguousStorageIfAvailable { y in
                for i in 0..<x.count where !Self.asciiEqualIgnoringCase(x[i], y[i]) { return false }
                return true
            }
        }
        if let equal = fast ?? nil { return equal }
        for (x, y) in zip(au, bu) where !Self.asciiEqualIgnoringCase(x, y) { return false }
        return true
    }

    /// Whether two bytes are equal, or the same ASCII letter in either case.
    @inline(__always)
    private static func asciiEqualIgnoringCase(_ x: UInt8, _ y: UInt8) -> Bool {
        x == y || ((x | 0x20) == (y | 0x20) && (x | 0x20) >= UInt8(ascii: "a") && (x | 0x20) <= UInt8(ascii: "z"))
    }
}

// HTTP's grammar is bytes: a comma or a space followed by a combining mark is one Character to
// Swift, but still a delimiter to every other parser (the differential fuzzer found a `Connection`
// value whose `keep-alive,` llhttp read as the token and a Character split did not). So delimiters
// are found in the UTF-8 view; every index found there is a scalar boundary, since the delimiters
// are single bytes.
extension StringProtocol {
    /// The pieces between each `delimiter` (an ASCII byte), found in the UTF-8 view; empty pieces
    /// left out when `omittingEmpty`.
    func split(byte delimiter: UInt8, omittingEmpty: Bool) -> [Substring] {
        let s = Substring(self)
        var pieces: [Substring] = []
        var start = s.startIndex
        while let i = s.utf8[start...].firstIndex(of: delimiter) {
            if !(omittingEmpty && start == i) { pieces.append(s[start..<i]) }
            start = s.utf8.index(after: i)
        }
        if !(omittingEmpty && start == s.endIndex) { pieces.append(s[start...]) }
        return pieces
    }

    /// Drops leading and trailing spaces and tabs (HTTP's OWS).
    func trimmingASCIIWhitespace() -> Substring {
        let s = Substring(self)
        let bytes = s.utf8
        guard let first = bytes.firstIndex(where: { $0 != 0x20 && $0 != 0x09 }) else { return s[s.endIndex...] }
        let last = bytes.lastIndex(where: { $0 != 0x20 && $0 != 0x09 })!
        return s[first..<bytes.index(after: last)]
    }

    /// The elements of a comma-separated field value (RFC 9110 §5.6.1), each trimmed of OWS; empty
    /// elements included.
    func httpListElements() -> [Substring] {
        let s = Substring(self)
        let bytes = s.utf8
        var elements: [Substring] = []
        var start = bytes.startIndex
        var i = start
        while i < bytes.endIndex {
            if bytes[i] == UInt8(ascii: ",") {
                elements.append(s[start..<i].trimmingASCIIWhitespace())
                start = bytes.index(after: i)
            }
            i = bytes.index(after: i)
        }
        elements.append(s[start...].trimmingASCIIWhitespace())
        return elements
    }
}
