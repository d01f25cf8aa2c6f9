import CryptoExtras
import JSON
import Testing

@testable import GooglePlay

@Suite("Google Play: a push's OIDC token checked")
struct PushTokenTests {
    static let key = ServiceAccountTests.key
    static let keys = SigningKeys(keys: ["k1": key.publicKey])
    static let policy = PushTokenPolicy(
        audience: "https://receiptd.example.com/v1/notifications/google", email: "push@p.iam.gserviceaccount.com")
    static let now: Int64 = 1_795_000_000_000

    static func token(
        _ claims: [String: JSONValue] = [:], kid: String = "k1", alg: String = "RS256", key: _RSA.Signing.PrivateKey = key
    ) -> String {
        var all: [String: JSONValue] = [
            "iss": .string("https://accounts.google.com"), "aud": .string(policy.audience), "email": .string(policy.email),
            "email_verified": .bool(true), "iat": .int(now / 1_000 - 10), "exp": .int(now / 1_000 + 3_590),
        ]
        for (k, v) in claims { all[k] = v }
        let header = JSONValue.object(strings: ["alg": .string(alg), "kid": .string(kid), "typ": .string("JWT")])
        let input = Base64URL.encode(header.jsonBytes) + "." + Base64URL.encode(JSONValue.object(strings: all).jsonBytes)
        let signature = try! key.signature(for: SHA256.hash(data: Array(input.utf8)), padding: .insecurePKCS1v1_5)
        return input + "." + Base64URL.encode(Array(signature.rawRepresentation))
    }

    @Test func googlesTokenForThisAudienceAndAccountIsAccepted() throws {
        try Self.policy.verify(Self.token(), keys: Self.keys, now: Self.now)
        try Self.policy.verify(Self.token(["iss": .string("accounts.google.com")]), keys: Self.keys, now: Self.now)
        try Self.policy.verify(
            Self.token(["aud": .array([.string("x"), .string(Self.policy.audience)])]), keys: Self.keys, now: Self.now)
        #expect(PushTokenPolicy.keyID(of: Self.token(kid: "abc")) == "abc")
    }

    @Test func everyOtherTokenIsRefusedSayingWhy() throws {
        let stranger = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        var tampered = Self.token().split(separator: ".").map(String.init)
        tampered[1] = Base64URL.encode(
            Array(#"{"aud":"x","email":"e","email_verified":true,"exp":9999999999,"iss":"accounts.google.com"}"#.utf8))
        let cases: [(String, PushTokenPolicy.Refusal)] = [
            ("not-a-jwt", .malformed), (Self.token(alg: "HS256"), .malformed),
            (Self.token(kid: "k2"), .unknownKey("k2")), (Self.token(key: stranger), .badSignature),
            (tampered.joined(separator: "."), .badSignature),
            (Self.token(["iss": .string("https://evil.example")]), .wrongIssuer),
            (Self.token(["aud": .string("https://other.example/push")]), .wrongAudience),
            (Self.token(["email": .string("someone@else.com")]), .wrongAccount),
            (Self.token(["email_verified": .bool(false)]), .wrongAccount),
            (Self.token(["exp": .int(Self.now / 1_000 - 61)]), .expired),
            (Self.token(["iat": .int(Self.now / 1_000 + 120)]), .notYetValid),
        ]
        for (token, refusal) in cases {
            #expect(throws: refusal) { try Self.policy.verify(token, keys: Self.keys, now: Self.now) }
        }
        // Within the leeway: a token a few seconds stale still passes.
        try Self.policy.verify(Self.token(["exp": .int(Self.now / 1_000 - 30)]), keys: Self.keys, now: Self.now)
    }

    @Test func aJWKSReadsBackItsKeysAndSkipsWhatItCannotUse() throws {
        let jwks = SigningKeys.jwks(["k1": Self.key.publicKey])
        let read = try SigningKeys(jwks: jwks)
        try Self.policy.verify(Self.token(), keys: read, now: Self.now)
        guard case .object(var doc) = try JSONValue.parse(jwks), case .array(var list) = doc[Identifier("keys")]! else { return }
        list.append(.object(strings: ["kid": .string("ec"), "kty": .string("EC"), "crv": .string("P-256")]))
        doc[Identifier("keys")] = .array(list)
        #expect(try SigningKeys(jwks: JSONValue.object(doc).jsonBytes).keys.keys.sorted() == ["k1"])
        #expect(throws: GooglePlayError.self) { _ = try SigningKeys(jwks: Array(#"{"keys":[]}"#.utf8)) }
        #expect(throws: GooglePlayError.self) { _ = try SigningKeys(jwks: Array("[]".utf8)) }
    }
}
