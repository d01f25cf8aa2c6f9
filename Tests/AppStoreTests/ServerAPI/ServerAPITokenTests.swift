import Clocks
import Crypto
import Foundation
import FoundationEssentials
import JSON
import ReceiptTesting
import Synchronization
import Testing

@testable import AppStore

@Suite("App Store Server API token")
struct ServerAPITokenTests {
    static let p8 = Fixtures.text("AppStoreServerAPI/testSigningKey.p8")
    static let issuer = "57246542-96fe-1a63-e053-0824d011072a"

    /// The three parts of a compact JWT, decoded.
    struct Decoded {
        var header: JSONValue
        var claims: JSONValue
        var signature: [UInt8]
        var signingInput: String
    }

    static func decode(_ token: String) throws -> Decoded {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        try #require(parts.count == 3)
        func bytes(_ part: String) throws -> [UInt8] {
            #expect(!part.contains("=") && !part.contains("+") && !part.contains("/"))  // base64url, unpadded
            var text = part.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
            while text.count % 4 != 0 { text += "=" }
            return Array(try #require(Data(base64Encoded: text)))
        }
        return Decoded(
            header: try JSONValue.parse(try bytes(parts[0])), claims: try JSONValue.parse(try bytes(parts[1])),
            signature: try bytes(parts[2]), signingInput: parts[0] + "." + parts[1])
    }

    @Test func headerAndClaimsAreExactlyApplesAndTheSignatureVerifies() throws {
        let credentials = try ServerAPIToken.Credentials(keyID: "2X9R4HXF34", issuerID: Self.issuer, p8: Self.p8)
        let provider = ServerAPIToken(credentials: credentials, clock: WallClock { 1_700_000_000_123 })
        let jwt = try Self.decode(provider.token(for: "com.example.app"))
        #expect(jwt.header == .object(["alg": .string("ES256"), "kid": .string("2X9R4HXF34"), "typ": .string("JWT")]))
        #expect(
            jwt.claims
                == .object([
                    "iss": .string(Self.issuer), "iat": .int(1_700_000_000), "exp": .int(1_700_000_600),
                    "aud": .string("appstoreconnect-v1"), "bid": .string("com.example.app"),
                ]))
        // Seconds, not milliseconds; within Apple's 60 minutes.
        let lifetime = try #require(jwt.claims["exp"]?.int64) - (try #require(jwt.claims["iat"]?.int64))
        #expect(lifetime > 0 && lifetime <= 3600)
        let publicKey = try P256.Signing.PrivateKey(pemRepresentation: Self.p8).publicKey
        let signature = try P256.Signing.ECDSASignature(rawRepresentation: jwt.signature)
        #expect(publicKey.isValidSignature(signature, for: Array(jwt.signingInput.utf8)))
        // Another key's signature does not verify: the check can fail.
        #expect(!P256.Signing.PrivateKey().publicKey.isValidSignature(signature, for: Array(jwt.signingInput.utf8)))
    }

    @Test func aTokenIsReusedForAFewMinutesPerAppThenSignedAgain() throws {
        let now = Mutex<Int64>(1_700_000_000_000)
        let provider = ServerAPIToken(
            credentials: try .init(keyID: "K", issuerID: Self.issuer, p8: Self.p8), clock: WallClock { now.withLock { $0 } })
        let first = try provider.token(for: "com.example.app")
        now.withLock { $0 += (ServerAPIToken.reuse - 1) * 1000 }
        #expect(try provider.token(for: "com.example.app") == first)
        let other = try Self.decode(provider.token(for: "com.example.other"))
        #expect(other.claims["bid"] == .string("com.example.other"))
        now.withLock { $0 += 1000 }
        let renewed = try provider.token(for: "com.example.app")
        #expect(renewed != first)
        #expect(try Self.decode(renewed).claims["iat"] == .int(1_700_000_000 + ServerAPIToken.reuse))
        // A clock that went back never gets a token issued in its future.
        now.withLock { $0 -= 60_000 }
        #expect(
            try Self.decode(provider.token(for: "com.example.app")).claims["iat"]
                == .int(1_700_000_000 + ServerAPIToken.reuse - 60))
    }

    @Test func aKeyThatIsNotAP256KeyIsRefusedWithoutEchoingIt() {
        let secret = "-----BEGIN PRIVATE KEY-----\nbm90IGEga2V5\n-----END PRIVATE KEY-----"
        do {
            _ = try ServerAPIToken.Credentials(keyID: "K", issuerID: Self.issuer, p8: secret)
            Issue.record("a malformed key was accepted")
        } catch {
            #expect(!"\(error)".contains("bm90IGEga2V5"))
        }
    }
}
