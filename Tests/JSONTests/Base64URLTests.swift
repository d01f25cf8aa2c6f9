import Foundation
import JSON
import Testing

@Suite("Base64url")
struct Base64URLTests {
    @Test func theURLAlphabetWithoutPaddingAndNothingElse() {
        #expect(Base64URL.decode(Array("-_8".utf8)) == [0xFB, 0xFF])
        #expect(Base64URL.decode(Array("+_8".utf8)) == nil)
        #expect(Base64URL.decode(Array("AAA=".utf8)) == nil)
        #expect(Base64URL.decode(Array("A".utf8)) == nil)
        #expect(Base64URL.decode(Array("".utf8)) == [])
        #expect(Base64URL.encode([0xFB, 0xFF]) == "-_8")
        #expect(Base64URL.encode([]) == "")
        // A substring's bytes (how a JWS's parts arrive) decode like an array's.
        let jws = "eyJhIjoxfQ.x"
        #expect(Base64URL.decode(jws.split(separator: ".")[0].utf8) == Array(#"{"a":1}"#.utf8))
    }

    /// Foundation's codec with the URL alphabet swapped in: the reference.
    static func reference(decode text: [UInt8]) -> [UInt8]? {
        guard !text.contains(where: { [UInt8(ascii: "+"), UInt8(ascii: "/"), UInt8(ascii: "=")].contains($0) }),
            text.count % 4 != 1
        else { return nil }
        var standard = text.map { $0 == UInt8(ascii: "-") ? UInt8(ascii: "+") : $0 == UInt8(ascii: "_") ? UInt8(ascii: "/") : $0 }
        while standard.count % 4 != 0 { standard.append(UInt8(ascii: "=")) }
        return Data(base64Encoded: Data(standard)).map { Array($0) }
    }

    @Test func agreesWithFoundationOnEveryLengthAndOnJunk() {
        var generator = SystemRandomNumberGenerator()
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_+/= .\u{0}".utf8)
        for length in 0..<200 {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let text = Base64URL.encode(bytes)
            let standard = Data(bytes).base64EncodedString()
            #expect(text == String(standard.filter { $0 != "=" }.map { $0 == "+" ? "-" : $0 == "/" ? "_" : $0 }))
            #expect(Base64URL.decode(Array(text.utf8)) == bytes)
            // Text from the alphabet and around it, every length.
            let junk = (0..<length).map { _ in
                alphabet[Int.random(in: 0..<(length % 3 == 0 ? alphabet.count : 64), using: &generator)]
            }
            #expect(Base64URL.decode(junk) == Self.reference(decode: junk), "\(String(decoding: junk, as: UTF8.self))")
        }
    }
}
