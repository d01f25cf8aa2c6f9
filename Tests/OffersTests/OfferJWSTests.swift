import Crypto
import FoundationEssentials
import JSON
import Testing

@testable import Offers

@Suite("Offers: the signed requests StoreKit takes since 2025")
struct OfferJWSTests {
    static let key = P256.Signing.PrivateKey()
    static let nonce = UUID(uuidString: "0F1E2D3C-4B5A-4968-8776-655443322110")!

    static func parts(_ jws: String) throws -> (header: JSONValue, claims: JSONValue, signature: [UInt8], input: String) {
        let p = jws.split(separator: ".", omittingEmptySubsequences: false)
        #expect(p.count == 3)
        return (
            try JSONValue.parse(try #require(Base64URL.decode(p[0].utf8))),
            try JSONValue.parse(try #require(Base64URL.decode(p[1].utf8))), try #require(Base64URL.decode(p[2].utf8)),
            String(p[0] + "." + p[1])
        )
    }

    @Test func aPromotionalOfferCarriesApplesClaimsAndVerifies() throws {
        let jws = try OfferJWS.sign(
            .promotionalOffer(productID: "monthly", offerID: "WINBACK50", transactionID: "2000000123456789"),
            bundleID: "com.example.app", keyID: "ABC123DEF4", issuerID: "57246542-96fe-1a63-e053-0824d011072a", key: Self.key,
            nonce: Self.nonce, issuedAt: 1_795_000_000)
        let (header, claims, signature, input) = try Self.parts(jws)
        #expect(header == .object(strings: ["alg": .string("ES256"), "kid": .string("ABC123DEF4"), "typ": .string("JWT")]))
        #expect(
            claims
                == .object(strings: [
                    "iss": .string("57246542-96fe-1a63-e053-0824d011072a"), "bid": .string("com.example.app"),
                    "aud": .string("promotional-offer"), "iat": .int(1_795_000_000),
                    "nonce": .string("0f1e2d3c-4b5a-4968-8776-655443322110"), "productId": .string("monthly"),
                    "offerIdentifier": .string("WINBACK50"), "transactionId": .string("2000000123456789"),
                ]))
        let es256 = try P256.Signing.ECDSASignature(rawRepresentation: signature)
        #expect(Self.key.publicKey.isValidSignature(es256, for: Array(input.utf8)))
        // Without a transaction id, the claim is absent (Apple's library leaves it out).
        let anonymous = try OfferJWS.sign(
            .promotionalOffer(productID: "monthly", offerID: "WINBACK50", transactionID: nil), bundleID: "com.example.app",
            keyID: "ABC123DEF4", issuerID: "i", key: Self.key, nonce: Self.nonce, issuedAt: 1)
        #expect(try Self.parts(anonymous).claims["transactionId"] == nil)
    }

    @Test func anIntroductoryOfferEligibilityDecisionCarriesItsAnswer() throws {
        for allow in [true, false] {
            let jws = try OfferJWS.sign(
                .introductoryOfferEligibility(
                    productID: "monthly", allowIntroductoryOffer: allow, transactionID: "2000000123456789"),
                bundleID: "com.example.app", keyID: "ABC123DEF4", issuerID: "i", key: Self.key, nonce: Self.nonce,
                issuedAt: 1_795_000_000)
            let (_, claims, signature, input) = try Self.parts(jws)
            #expect(claims["aud"]?.string == "introductory-offer-eligibility")
            #expect(claims["allowIntroductoryOffer"] == .bool(allow) && claims["transactionId"]?.string == "2000000123456789")
            #expect(claims["offerIdentifier"] == nil)
            #expect(
                Self.key.publicKey.isValidSignature(
                    try P256.Signing.ECDSASignature(rawRepresentation: signature), for: Array(input.utf8)))
        }
    }
}
