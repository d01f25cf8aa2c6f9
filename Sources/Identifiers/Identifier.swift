/// Text that is compared, hashed and ordered as its exact UTF-8 bytes.
///
/// Swift's `String` equality and hashing follow Unicode canonical equivalence: `"Zo\u{EB}"` (NFC)
/// and `"Zoe\u{308}"` (NFD) are `==` and hash alike. SQLite compares the bytes, and so do people's
/// backends. receiptd never normalizes an id: two spellings are two users, two API keys, two JSON
/// member names (README "Identifiers"). Every dictionary, set and comparison of ids, keys and JSON
/// member names goes through this type so that Swift agrees with the database.
public struct Identifier: Hashable, Comparable, Sendable, CustomStringConvertible, ExpressibleByStringLiteral {
    /// The text exactly as received (Swift keeps a string's UTF-8 bytes as given).
    public let string: String

    public init(_ string: String) { self.string = string }
    public init(_ string: Substring) { self.string = String(string) }
    public init(stringLiteral value: String) { self.string = value }

    public static func == (a: Identifier, b: Identifier) -> Bool { a.string.utf8.elementsEqual(b.string.utf8) }

    public func hash(into hasher: inout Hasher) {
        var string = string
        string.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
        hasher.combine(string.utf8.count)
    }

    /// Byte order, which is Unicode code point order for UTF-8, and SQLite's `BINARY` collation.
    public static func < (a: Identifier, b: Identifier) -> Bool {
        a.string.utf8.lexicographicallyPrecedes(b.string.utf8)
    }

    public var description: String { string }
}

extension String {
    /// Byte-for-byte equality, the database's; `==` on `String` is canonical equivalence.
    public func isExactly(_ other: String) -> Bool { utf8.elementsEqual(other.utf8) }
}
