/// Text that is compared, hashed and ordered as its exact UTF-8 bytes.
///
/// Swift's `String` equality and hashing follow Unicode canonical equivalence: `"Zo\u{EB}"` (NFC)
/// and `"Zoe\u{308}"` (NFD) are `==` and hash alike. SQLite compares the bytes, and so do people's
/// backends. receiptd never normalizes an id: two spellings are two users, two API keys, two JSON
/// member names (Docs/api.md "Identifiers"). Every dictionary, set and comparison of ids, keys and JSON
/// member names goes through this type so that Swift agrees with the database.
public struct Identifier: Hashable, Comparable, Sendable, CustomStringConvertible, ExpressibleByStringLiteral {
    /// The text exactly as received (Swift keeps a string's UTF-8 bytes as given).
    public let string: String

    public init(_ string: String) { self.string = string }
    public init(_ string: Substring) { self.string = String(string) }
    public init(stringLiteral value: String) { self.string = value }

    public static func == (a: Identifier, b: Identifier) -> Bool {
        sameRepresentation(a.string, b.string)
            || (a.string.utf8.count == b.string.utf8.count && compare(a.string, b.string) == 0)
    }

    /// Whether two strings are one value: the same two words (the same storage and count, or the
    /// same bytes of a small string kept inline), so the same bytes. A copy of a key or of a
    /// row's text is most often the very string it is compared with; anything else is compared
    /// byte by byte.
    @inline(__always)
    static func sameRepresentation(_ a: String, _ b: String) -> Bool {
        guard MemoryLayout<String>.size == 16 else { return false }  // two words on 64-bit platforms
        return withUnsafeBytes(of: a) { x in
            withUnsafeBytes(of: b) { y in
                x.load(as: UInt64.self) == y.load(as: UInt64.self)
                    && x.load(fromByteOffset: 8, as: UInt64.self) == y.load(fromByteOffset: 8, as: UInt64.self)
            }
        }
    }

    /// Its bytes where they lie (a native string's, or a small one's from the stack), without a
    /// copy of the string to make them contiguous (a retain and a release a hash) unless they are not.
    public func hash(into hasher: inout Hasher) {
        let hashed = string.utf8.withContiguousStorageIfAvailable { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
        if hashed == nil {
            var string = string
            string.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
        }
        hasher.combine(string.utf8.count)
    }

    /// Byte order, which is Unicode code point order for UTF-8, and SQLite's `BINARY` collation.
    public static func < (a: Identifier, b: Identifier) -> Bool { compare(a.string, b.string) < 0 }

    /// The byte order of `a` and `b`: negative, zero or positive. Over the contiguous UTF-8 a
    /// native string keeps (the generic sequence walk was a JSON writer's hot spot: it sorts
    /// every object's keys); bridged strings take the slow path.
    static func compare(_ a: String, _ b: String) -> Int {
        let fast = a.utf8.withContiguousStorageIfAvailable { x in
            b.utf8.withContiguousStorageIfAvailable { y -> Int in
                let n = min(x.count, y.count)
                var i = 0
                while i < n {
                    if x[i] != y[i] { return x[i] < y[i] ? -1 : 1 }
                    i += 1
                }
                return x.count - y.count
            }
        }
        if let order = fast ?? nil { return order }
        if a.utf8.elementsEqual(b.utf8) { return 0 }
        return a.utf8.lexicographicallyPrecedes(b.utf8) ? -1 : 1
    }

    public var description: String { string }
}

extension String {
    /// Byte-for-byte equality, the database's; `==` on `String` is canonical equivalence.
    /// ``Identifier``'s: the lengths, then the contiguous bytes (a generic walk of two UTF-8 views
    /// was a tenth of a chart read from the rollups, which names a store per row).
    public func isExactly(_ other: String) -> Bool { Identifier(self) == Identifier(other) }
}
