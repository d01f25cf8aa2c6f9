import JSON
import Testing

@Suite("Base64url")
struct Base64URLTests {
    @Test func theURLAlphabetWithoutPaddingAndNothingElse() {
        #expect(Base64URL.decode(Array("-_8".utf8)) == [0xFB, 0xFF])
        #expect(Base64URL.decode(Array("+_8".utf8)) == nil)
        #expect(Base64URL.decode(Array("AAA=".utf8)) == nil)
        #expect(Base64URL.decode(Array("A".utf8)) == nil)
        #expect(Base64URL.encode([0xFB, 0xFF]) == "-_8")
    }
}
