package import Clocks
package import Crypto
import FoundationEssentials
import Identifiers
import JSON
import Synchronization

/// The bearer token of App Store Server API requests (Docs/apple-protocols.md §4.1): a JWT signed
/// ES256 with the In-App Purchase key from App Store Connect, header `alg`, `kid`, `typ`, claims
/// `iss`, `iat`, `exp`, `aud`, `bid`. One per app (the `bid` claim), signed again once it has been
/// used for ``reuse`` (Apple's libraries sign one per call; one a few minutes keeps the CPU out of
/// every request), so a token in use always has more than `lifetime − reuse` left.
package final class ServerAPIToken: Sendable {
    /// What App Store Connect's Keys page gives for an In-App Purchase key.
    package struct Credentials: Sendable {
        /// The key's id (the `kid` header), e.g. `2X9R4HXF34`.
        package var keyID: String
        /// The team's issuer id (the `iss` claim), a UUID.
        package var issuerID: String
        /// The `.p8` key: a secret.
        package var key: P256.Signing.PrivateKey

        package init(keyID: String, issuerID: String, key: P256.Signing.PrivateKey) {
            self.keyID = keyID
            self.issuerID = issuerID
            self.key = key
        }

        /// The `.p8` file's text (PKCS#8 PEM, an EC P-256 key). Throws ``KeyError`` without echoing it.
        package init(keyID: String, issuerID: String, p8: String) throws(KeyError) {
            guard let key = try? P256.Signing.PrivateKey(pemRepresentation: p8) else { throw KeyError() }
            self.init(keyID: keyID, issuerID: issuerID, key: key)
        }
    }

    /// The key is not a PEM EC P-256 private key (its text is never part of the error).
    package struct KeyError: Error, CustomStringConvertible {
        package var description: String { "the App Store Server API key is not a PEM (PKCS#8) EC P-256 private key" }
    }

    /// Seconds from `iat` to `exp` (Apple allows at most 60 minutes).
    package static let lifetime: Int64 = 10 * 60
    /// Seconds a token is handed out after it was signed.
    package static let reuse: Int64 = 5 * 60
    /// Apple's audience for the App Store Server API.
    package static let audience = "appstoreconnect-v1"

    /// Each app's In-App Purchase key: its App Store Connect account's.
    private let credentials: @Sendable (_ bundleID: String) -> Credentials?
    private let clock: WallClock
    /// By bundle id: the token and its `iat`.
    private let signed = Mutex<[Identifier: (token: String, issuedAt: Int64)]>([:])

    /// One key for every app (one App Store Connect account).
    package convenience init(credentials: Credentials, clock: WallClock = .system) {
        self.init(credentialsFor: { _ in credentials }, clock: clock)
    }

    /// Each app's key, chosen by its bundle id; an app with none gets no token (``NoKey``).
    package init(credentialsFor: @escaping @Sendable (_ bundleID: String) -> Credentials?, clock: WallClock = .system) {
        self.credentials = credentialsFor
        self.clock = clock
    }

    /// No In-App Purchase key is configured for the app's account.
    package struct NoKey: Error, CustomStringConvertible {
        package var bundleID: String
        package var description: String { "no In-App Purchase key is configured for \(bundleID)'s account" }
    }

    /// A token for `bundleID`'s requests, signed with its account's key, valid for at least
    /// `lifetime − reuse` seconds from now. Throws ``NoKey`` for an app whose account has no key,
    /// or if signing fails (CryptoKit's error, which never holds the key).
    package func token(for bundleID: String) throws -> String {
        let now = clock.now() / 1000
        let key = Identifier(bundleID)
        if let cached = signed.withLock({ $0[key] }), now >= cached.issuedAt, now - cached.issuedAt < Self.reuse {
            return cached.token
        }
        let token = try sign(bundleID: bundleID, issuedAt: now)
        signed.withLock { $0[key] = (token, now) }
        return token
    }

    /// The compact JWT for `bundleID` issued at `issuedAt` (UNIX seconds).
    func sign(bundleID: String, issuedAt: Int64) throws -> String {
        guard let credentials = credentials(bundleID) else { throw NoKey(bundleID: bundleID) }
        let header: JSONValue = .object([
            "alg": .string("ES256"), "kid": .string(credentials.keyID), "typ": .string("JWT"),
        ])
        let claims: JSONValue = .object([
            "iss": .string(credentials.issuerID), "iat": .int(issuedAt), "exp": .int(issuedAt + Self.lifetime),
            "aud": .string(Self.audience), "bid": .string(bundleID),
        ])
        let input = JWSSigner.base64URL(header.jsonBytes) + "." + JWSSigner.base64URL(claims.jsonBytes)
        let signature = try credentials.key.signature(for: Array(input.utf8))
        return input + "." + JWSSigner.base64URL(Array(signature.rawRepresentation))
    }
}
