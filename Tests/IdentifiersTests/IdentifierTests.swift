import Identifiers
import Testing

@Suite struct IdentifierTests {
    /// Canonically equivalent spellings that Swift's String calls equal, and compatibility
    /// characters that look alike: all are different identifiers.
    static let pairs: [(String, String)] = [
        ("Zo\u{00EB}", "Zoe\u{0308}"),  // NFC, NFD
        ("caf\u{00E9}", "cafe\u{0301}"),
        ("\u{212B}", "\u{00C5}"),  // ANGSTROM SIGN, A WITH RING (canonical singleton)
        ("sk-Key-1", "sk-\u{212A}ey-1"),  // KELVIN SIGN for K: canonical singleton of U+004B
        ("a;b", "a\u{037E}b"),  // GREEK QUESTION MARK: canonical singleton of ';'
        ("\u{FB01}le", "file"),  // compatibility ligature
    ]

    @Test(arguments: pairs) func spellingsAreDistinct(_ pair: (String, String)) {
        let (a, b) = (Identifier(pair.0), Identifier(pair.1))
        #expect(a != b)
        #expect(!pair.0.isExactly(pair.1))
        #expect(Set([a, b]).count == 2)
        var dictionary: [Identifier: Int] = [:]
        dictionary[a] = 1
        dictionary[b] = 2
        #expect(dictionary[a] == 1 && dictionary[b] == 2)
        #expect((a < b) != (b < a))
    }

    /// Equal when they are one value (a copy: the same storage, or the same small string), and
    /// when they are the same bytes in two storages; never for two spellings, small or long.
    @Test func oneValueAndTheSameBytesAreEqualAndNothingElse() {
        let parts = ["an-app-user-id-longer-than-fifteen-bytes", "/2"]
        let long = parts.joined()
        let copy = long
        let again = parts.joined()
        #expect(long.isExactly(copy) && long.isExactly(again) && Identifier(long) == Identifier(again))
        #expect(!long.isExactly(parts[0] + "/3") && !long.isExactly(parts[0]))
        let small = "abc"
        let smallAgain = String("cba".reversed())
        #expect(small.isExactly(smallAgain) && !small.isExactly("abd"))
        for (a, b) in Self.pairs + [("Zo\u{00EB}-a-long-enough-string", "Zoe\u{0308}-a-long-enough-string")] {
            #expect(!a.isExactly(b) && !b.isExactly(a))
        }
    }

    @Test func swiftStringsWouldConfuseThem() {
        // The premise: without Identifier these collide.
        #expect("Zo\u{00EB}" == "Zoe\u{0308}")
        #expect("sk-Key-1" == "sk-\u{212A}ey-1")
        #expect(Set(["a;b", "a\u{037E}b"]).count == 1)
    }

    @Test func sameBytesAreEqualAndHashAlike() {
        let a = Identifier("Zo\u{00EB}")
        let b = Identifier(String(decoding: Array("Zo\u{00EB}".utf8), as: UTF8.self))
        #expect(a == b)
        #expect(a.hashValue == b.hashValue)
        #expect(Identifier("abc") == "abc")
        // A literal, a copy of its bytes, a slice made a string, small and not: one hash.
        for text in ["abc", "a-long-enough-identifier-\u{00EB}"] {
            let forms = [text, String(decoding: Array(text.utf8), as: UTF8.self), String(("x" + text).dropFirst())]
            #expect(Set(forms.map { Identifier($0).hashValue }).count == 1)
        }
    }

    @Test func orderIsByteOrder() {
        let sorted = ["b", "a\u{0301}", "\u{00E1}", "a", "Z"].map { Identifier($0) }.sorted().map(\.string)
        #expect(sorted.map { Array($0.utf8) } == [[0x5A], [0x61], [0x61, 0xCC, 0x81], [0x62], [0xC3, 0xA1]])
    }

    /// The byte walk agrees with the generic one on every pair: prefixes, equal text, bytes past 0x7F.
    @Test func theFastOrderIsTheSequenceOrder() {
        let words = ["", "a", "ab", "abc", "b", "a\u{0301}", "\u{00E1}", "\u{10FFFF}", "Z", "a\u{0}", "\u{7F}", "\u{80}"]
        for x in words {
            for y in words {
                let (a, b) = (Identifier(x), Identifier(y))
                #expect((a < b) == x.utf8.lexicographicallyPrecedes(y.utf8), "\(x.debugDescription) < \(y.debugDescription)")
                #expect((a == b) == x.utf8.elementsEqual(y.utf8))
            }
        }
    }
}
