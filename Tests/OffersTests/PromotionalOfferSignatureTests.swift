import Crypto
import FoundationEssentials
import Testing

@testable import Offers

@Suite("Offers: the promotional offer signature (original API)")
struct PromotionalOfferSignatureTests {
    static let key = P256.Signing.PrivateKey()
    static let nonce = UUID(uuidString: "D5C5E3B4-1A2B-4C3D-8E9F-0A1B2C3D4E5F")!

    @Test func theSignedTextIsApplesFieldsJoinedByTheInvisibleSeparator() {
        let text = PromotionalOfferSignature.payload(
            bundleID: "com.example.app", keyID: "ABC123DEF4", productID: "monthly", offerID: "WINBACK50",
            applicationUsername: "A1B2C3D4-0000-4000-8000-00000000000A", nonce: Self.nonce.uuidString,
            timestamp: 1_795_000_000_000)
        #expect(
            text
                == "com.example.app\u{2063}ABC123DEF4\u{2063}monthly\u{2063}WINBACK50\u{2063}a1b2c3d4-0000-4000-8000-00000000000a"
                + "\u{2063}d5c5e3b4-1a2b-4c3d-8e9f-0a1b2c3d4e5f\u{2063}1795000000000")
        // U+2063 is three bytes in UTF-8: E2 81 A3.
        #expect(Array("\u{2063}".utf8) == [0xE2, 0x81, 0xA3])
    }

    @Test func theSignatureVerifiesOverThatTextWithTheKeysPublicHalf() throws {
        let signed = try PromotionalOfferSignature.sign(
            bundleID: "com.example.app", keyID: "ABC123DEF4", key: Self.key, productID: "monthly", offerID: "WINBACK50",
            applicationUsername: "User-7", nonce: Self.nonce, timestamp: 1_795_000_000_000)
        #expect(signed.nonce == "d5c5e3b4-1a2b-4c3d-8e9f-0a1b2c3d4e5f" && signed.keyID == "ABC123DEF4")
        let der = try #require(Data(base64Encoded: signed.signature))
        let signature = try P256.Signing.ECDSASignature(derRepresentation: der)
        let text = PromotionalOfferSignature.payload(
            bundleID: "com.example.app", keyID: "ABC123DEF4", productID: "monthly", offerID: "WINBACK50",
            applicationUsername: "user-7", nonce: signed.nonce, timestamp: 1_795_000_000_000)
        #expect(Self.key.publicKey.isValidSignature(signature, for: Array(text.utf8)))
        // Not over another offer, nor by another key.
        let other = PromotionalOfferSignature.payload(
            bundleID: "com.example.app", keyID: "ABC123DEF4", productID: "monthly", offerID: "WINBACK60",
            applicationUsername: "user-7", nonce: signed.nonce, timestamp: 1_795_000_000_000)
        #expect(!Self.key.publicKey.isValidSignature(signature, for: Array(other.utf8)))
        #expect(!P256.Signing.PrivateKey().publicKey.isValidSignature(signature, for: Array(text.utf8)))
    }
}
