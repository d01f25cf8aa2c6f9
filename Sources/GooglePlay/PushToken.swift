package import CryptoExtras
import JSON

/// Google's public keys for the ID tokens it signs (a JWKS: `{"keys": [{"kid", "kty": "RSA",
/// "alg": "RS256", "n", "e"}]}`, as https://www.googleapis.com/oauth2/v3/certs serves them).
package struct SigningKeys: Sendable {
    package let keys: [String: _RSA.Signing.PublicKey]

    package init(keys: [String: _RSA.Signing.PublicKey]) { self.keys = keys }

    /// Reads a JWKS; RSA keys of 2,048 bits or more only, others left out. Throws when none is usable.
    package init(jwks bytes: [UInt8]) throws(GooglePlayError) {
        guard let value = try? JSONValue.parse(bytes), let list = value["keys"]?.array else {
            throw .unexpectedAnswer("the signing keys are not a JWKS ({\"keys\": […]})")
        }
        var keys: [String: _RSA.Signing.PublicKey] = [:]
        for key in list {
            guard key["kty"]?.string == "RSA", key["alg"].map({ $0.string == "RS256" }) ?? true, let kid = key["kid"]?.string,
                let n = key["n"]?.string.flatMap({ Base64URL.decode($0.utf8) }),
                let e = key["e"]?.string.flatMap({ Base64URL.decode($0.utf8) }),
                let publicKey = try? _RSA.Signing.PublicKey(n: n, e: e)
            else { continue }
            keys[kid] = publicKey
        }
        guard !keys.isEmpty else { throw .unexpectedAnswer("the JWKS holds no RS256 key receiptd can use") }
        self.keys = keys
    }

    /// A JWKS of `keys` (the simulator serves its own).
    package static func jwks(_ keys: [String: _RSA.Signing.PublicKey]) -> [UInt8] {
        let list: [JSONValue] = keys.sorted { $0.key < $1.key }.compactMap { kid, key in
            guard let primitives = try? key.getKeyPrimitives() else { return nil }
            return .object(strings: [
                "kid": .string(kid), "kty": .string("RSA"), "alg": .string("RS256"), "use": .string("sig"),
                "n": .string(Base64URL.encode(Array(primitives.modulus))),
                "e": .string(Base64URL.encode(Array(primitives.publicExponent))),
            ])
        }
        return JSONValue.object(strings: ["keys": .array(list)]).jsonBytes
    }
}

/// Checks the OIDC ID token a Pub/Sub push carries (`Authorization: Bearer …`,
/// https://cloud.google.com/pubsub/docs/authenticate-push-subscriptions): an RS256 JWT signed by
/// one of Google's keys, issued by Google, for the configured audience, naming the configured
/// service account with a verified address, not expired. Pure: the keys and the time are given.
package struct PushTokenPolicy: Sendable, Equatable {
    /// The push subscription's audience (its push endpoint's URL unless set otherwise).
    package var audience: String
    /// The service account the push subscription authenticates as.
    package var email: String
    /// Clock difference tolerated on `exp` and `iat`.
    package var leewaySeconds: Int64

    package static let issuers: Set<String> = ["accounts.google.com", "https://accounts.google.com"]

    package init(audience: String, email: String, leewaySeconds: Int64 = 60) {
        self.audience = audience
        self.email = email
        self.leewaySeconds = leewaySeconds
    }

    /// Why a token is refused, in words safe to log (never the token).
    package enum Refusal: Error, Sendable, Equatable, CustomStringConvertible {
        case malformed
        case unknownKey(String)
        case badSignature
        case wrongIssuer
        case wrongAudience
        case wrongAccount
        case expired
        case notYetValid

        package var description: String {
            switch self {
            case .malformed: "not an RS256 JWT"
            case .unknownKey(let kid): "signed with a key Google does not list (kid \(kid.prefix(64)))"
            case .badSignature: "the signature does not verify"
            case .wrongIssuer: "not issued by Google"
            case .wrongAudience: "for another audience"
            case .wrongAccount: "for another service account, or its address is not verified"
            case .expired: "expired"
            case .notYetValid: "issued in the future"
            }
        }
    }

    /// The key id a token names (to fetch Google's keys again when it is new); nil when malformed.
    package static func keyID(of token: String) -> String? {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let bytes = Base64URL.decode(parts[0].utf8), let header = try? JSONValue.parse(bytes) else {
            return nil
        }
        return header["kid"]?.string
    }

    /// Verifies `token` at `now` (epoch ms) against `keys`.
    package func verify(_ token: String, keys: SigningKeys, now: Int64) throws(Refusal) {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, token.utf8.count <= 8_192, let headerBytes = Base64URL.decode(parts[0].utf8),
            let claimBytes = Base64URL.decode(parts[1].utf8), let signature = Base64URL.decode(parts[2].utf8),
            let header = try? JSONValue.parse(headerBytes), let claims = try? JSONValue.parse(claimBytes),
            header["alg"]?.string == "RS256", let kid = header["kid"]?.string
        else { throw .malformed }
        guard let key = keys.keys[kid] else { throw .unknownKey(kid) }
        let input = Array((parts[0] + "." + parts[1]).utf8)
        guard
            key.isValidSignature(
                _RSA.Signing.RSASignature(rawRepresentation: signature), for: SHA256.hash(data: input),
                padding: .insecurePKCS1v1_5)
        else { throw .badSignature }
        guard let issuer = claims["iss"]?.string, Self.issuers.contains(issuer) else { throw .wrongIssuer }
        let audiences = claims["aud"]?.array?.compactMap(\.string) ?? claims["aud"]?.string.map { [$0] } ?? []
        guard audiences.contains(audience) else { throw .wrongAudience }
        guard claims["email"]?.string == email, claims["email_verified"]?.bool == true else { throw .wrongAccount }
        let seconds = now / 1_000
        guard let exp = claims["exp"]?.int64, exp + leewaySeconds > seconds else { throw .expired }
        if let iat = claims["iat"]?.int64, iat - leewaySeconds > seconds { throw .notYetValid }
    }
}
