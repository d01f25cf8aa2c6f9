import CryptoExtras
import FoundationEssentials
import JSON
import Testing

@testable import GooglePlay

@Suite("Google Play: the service account's sign-in")
struct ServiceAccountTests {
    /// A fresh 2,048-bit key, once for the suite (generating one takes a while).
    static let key = try! _RSA.Signing.PrivateKey(keySize: .bits2048)

    static func keyFile(
        type: String = "service_account", email: String? = "receiptd@app.iam.gserviceaccount.com",
        privateKey: String? = key.pemRepresentation
    ) -> [UInt8] {
        var members: [String: JSONValue] = [
            "type": .string(type), "private_key_id": .string("k1"), "token_uri": .string("https://oauth2.googleapis.com/token"),
            "project_id": .string("p"),
        ]
        if let email { members["client_email"] = .string(email) }
        if let privateKey { members["private_key"] = .string(privateKey) }
        return JSONValue.object(strings: members).jsonBytes
    }

    private static func decoded(_ part: Substring) throws -> [UInt8] { try #require(Base64URL.decode(part.utf8)) }

    @Test func theAssertionIsGooglesJWTSignedWithTheKey() throws {
        let account = try ServiceAccountKey(json: Self.keyFile())
        let jwt = try account.assertion(now: 1_764_115_200_123)
        let parts = jwt.split(separator: ".", omittingEmptySubsequences: false)
        #expect(parts.count == 3)
        #expect(String(decoding: try Self.decoded(parts[0]), as: UTF8.self) == #"{"alg":"RS256","kid":"k1","typ":"JWT"}"#)
        #expect(
            String(decoding: try Self.decoded(parts[1]), as: UTF8.self)
                == #"{"aud":"https://oauth2.googleapis.com/token","exp":1764118800,"iat":1764115200,"#
                + #""iss":"receiptd@app.iam.gserviceaccount.com","scope":"https://www.googleapis.com/auth/androidpublisher"}"#)
        // RS256 over the first two parts, by the key's public half; not by another key, nor over other bytes.
        let signature = _RSA.Signing.RSASignature(rawRepresentation: try Self.decoded(parts[2]))
        let input = Array((parts[0] + "." + parts[1]).utf8)
        #expect(Self.key.publicKey.isValidSignature(signature, for: SHA256.hash(data: input), padding: .insecurePKCS1v1_5))
        #expect(!Self.key.publicKey.isValidSignature(signature, for: SHA256.hash(data: input + [0]), padding: .insecurePKCS1v1_5))
        let other = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        #expect(!other.publicKey.isValidSignature(signature, for: SHA256.hash(data: input), padding: .insecurePKCS1v1_5))
        #expect(!jwt.contains("=") && !jwt.contains("+") && !jwt.contains("/"))
    }

    @Test func anAssertionLivesAnHourAtMostAndTheSimulatorsTokenURIReplacesGooglesAsItsAudience() throws {
        let account = try ServiceAccountKey(json: Self.keyFile(), tokenURI: "http://127.0.0.1:18096/google/token")
        let claims = try JSONValue.parse(
            try Self.decoded(try account.assertion(now: 10_000, lifetimeSeconds: 86_400).split(separator: ".")[1]))
        #expect(claims["aud"]?.string == "http://127.0.0.1:18096/google/token")
        #expect(claims["iat"]?.int64 == 10 && claims["exp"]?.int64 == 3_610)
        #expect(ServiceAccountKey.tokenRequestBody(assertion: "a.b.c").hasSuffix("&assertion=a.b.c"))
    }

    @Test func aKeyThatWillNotDoSaysWhichPartAndNeverWhatItHolds() throws {
        let cases: [([UInt8], String)] = [
            (Array("not json".utf8), "not a JSON object"),
            (Self.keyFile(type: "authorized_user"), "\"type\""),
            (Self.keyFile(email: nil), "\"client_email\""),
            (Self.keyFile(privateKey: nil), "\"private_key\""),
            (Self.keyFile(privateKey: "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"), "\"private_key\""),
        ]
        for (file, says) in cases {
            let error = #expect(throws: GooglePlayError.self) { try ServiceAccountKey(json: file) }
            #expect(error?.description.contains(says) == true, "\(String(describing: error))")
        }
        let account = try ServiceAccountKey(json: Self.keyFile())
        #expect(account.description == "service account receiptd@app.iam.gserviceaccount.com (key k1)")
        #expect(!"\(account)".contains("PRIVATE"))
    }

    @Test func theTokenEndpointsAnswerGivesATokenFreshUntilAMinuteBeforeItExpires() throws {
        let body = Array(#"{"access_token":"ya29.x","expires_in":3599,"token_type":"Bearer"}"#.utf8)
        let token = try AccessToken.granted(body, at: 1_000_000)
        #expect(token == AccessToken(value: "ya29.x", expiresAt: 4_599_000))
        #expect(token.isFresh(at: 4_538_999) && !token.isFresh(at: 4_539_000))
        #expect(!"\(token)".contains("ya29"))
        let refused = #expect(throws: GooglePlayError.self) {
            try AccessToken.granted(Array(#"{"error":"invalid_grant","error_description":"Invalid JWT"}"#.utf8), at: 0)
        }
        #expect(refused?.description.contains("invalid_grant") == true)
        for bad in [
            #"{"access_token":"t","token_type":"Bearer"}"#, #"{"access_token":"t","expires_in":60,"token_type":"mac"}"#, "[]",
        ] {
            #expect(throws: GooglePlayError.self) { try AccessToken.granted(Array(bad.utf8), at: 0) }
        }
    }
}
