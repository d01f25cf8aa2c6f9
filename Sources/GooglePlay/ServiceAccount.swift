package import CryptoExtras
import FoundationEssentials
import JSON

/// A Google Cloud service account's JSON key, as the Cloud console downloads it: what receiptd
/// signs in to the Google Play Developer API with (OAuth 2.0 for server to server applications,
/// https://developers.google.com/identity/protocols/oauth2/service-account#authorizingrequests).
/// It is a secret: read from a secret file or the environment, never from `Config/`, and never
/// repeated in an error or a log (its description names the account only).
package struct ServiceAccountKey: Sendable, CustomStringConvertible {
    /// The account's address: the JWT's issuer, and the name Play Console grants access to.
    package let clientEmail: String
    /// Which of the account's keys this is: the JWT header's `kid`.
    package let privateKeyID: String
    /// Where an assertion is exchanged for an access token (Google's, or the simulator's).
    package let tokenURI: String
    private let privateKey: _RSA.Signing.PrivateKey

    /// The scope of the Google Play Developer API.
    package static let androidPublisherScope = "https://www.googleapis.com/auth/androidpublisher"
    /// The longest an assertion may live: Google refuses one whose `exp` is more than an hour after `iat`.
    package static let maxAssertionLifetimeSeconds: Int64 = 3_600

    /// Reads a key file's JSON. `tokenURI`, when given, replaces the file's `token_uri` (the
    /// simulator's, in tests and offline). Throws ``GooglePlayError/credentials(_:)`` saying which
    /// member is missing or wrong, never what the file holds.
    package init(json: [UInt8], tokenURI: String? = nil) throws(GooglePlayError) {
        guard let value = try? JSONValue.parse(json), case .object = value else {
            throw .credentials("the service account key is not a JSON object")
        }
        guard value["type"]?.string == "service_account" else {
            throw .credentials("the key's \"type\" is not \"service_account\"")
        }
        func member(_ name: String) throws(GooglePlayError) -> String {
            guard let text = value[name]?.string else { throw .credentials("the key has no \"\(name)\"") }
            return text
        }
        clientEmail = try member("client_email")
        privateKeyID = try member("private_key_id")
        if let tokenURI { self.tokenURI = tokenURI } else { self.tokenURI = try member("token_uri") }
        do {
            privateKey = try _RSA.Signing.PrivateKey(pemRepresentation: try member("private_key"))
        } catch let error as GooglePlayError {
            throw error
        } catch {
            throw .credentials("the key's \"private_key\" is not an RSA private key of 2,048 bits or more in PEM")
        }
    }

    package var description: String { "service account \(clientEmail) (key \(privateKeyID))" }

    /// The key's public half: what Google (or the simulator) checks an assertion with.
    package var publicKey: _RSA.Signing.PublicKey { privateKey.publicKey }

    /// A key file as the Cloud console writes one, for `privateKey` (the simulator's own account
    /// when none is configured, and the tests').
    package static func keyFile(
        clientEmail: String, privateKeyID: String, privateKey: _RSA.Signing.PrivateKey, tokenURI: String,
        projectID: String = "receiptd-simulator"
    ) -> [UInt8] {
        JSONValue.object(strings: [
            "type": .string("service_account"), "project_id": .string(projectID), "private_key_id": .string(privateKeyID),
            "private_key": .string(privateKey.pemRepresentation), "client_email": .string(clientEmail),
            "token_uri": .string(tokenURI),
        ]).jsonBytes
    }

    /// The signed JWT (RS256) that asks `tokenURI` for an access token with `scope`, issued at `now`
    /// (Unix milliseconds; the JWT counts seconds) and good for `lifetimeSeconds` (at most an hour).
    package func assertion(
        scope: String = androidPublisherScope, now: Int64, lifetimeSeconds: Int64 = maxAssertionLifetimeSeconds
    ) throws(GooglePlayError) -> String {
        let issuedAt = now / 1_000
        let header = JSONValue.object(strings: ["alg": .string("RS256"), "typ": .string("JWT"), "kid": .string(privateKeyID)])
        let claims = JSONValue.object(strings: [
            "iss": .string(clientEmail), "scope": .string(scope), "aud": .string(tokenURI), "iat": .int(issuedAt),
            "exp": .int(issuedAt + min(max(lifetimeSeconds, 1), Self.maxAssertionLifetimeSeconds)),
        ])
        let signingInput = Base64URL.encode(header.jsonBytes) + "." + Base64URL.encode(claims.jsonBytes)
        do {
            // RS256 is RSASSA-PKCS1-v1_5 with SHA-256 (RFC 7518 §3.3); swift-crypto names the padding "insecure".
            let signature = try privateKey.signature(
                for: SHA256.hash(data: Array(signingInput.utf8)), padding: .insecurePKCS1v1_5)
            return signingInput + "." + Base64URL.encode(Array(signature.rawRepresentation))
        } catch {
            throw .credentials("the service account key could not sign")
        }
    }

    /// The form body that exchanges `assertion` for an access token (RFC 7523 §2.1).
    package static func tokenRequestBody(assertion: String) -> String {
        "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=" + assertion
    }
}

/// An OAuth access token for the Play Developer API and when it stops being good.
package struct AccessToken: Sendable, Equatable, CustomStringConvertible {
    package let value: String
    /// Unix milliseconds.
    package let expiresAt: Int64

    package init(value: String, expiresAt: Int64) {
        self.value = value
        self.expiresAt = expiresAt
    }

    /// How long before its expiry a token is taken anew: a call started just before would arrive
    /// with a token gone stale.
    package static let refreshMarginMs: Int64 = 60_000

    /// Whether a call made at `now` may still use it.
    package func isFresh(at now: Int64) -> Bool { now < expiresAt - Self.refreshMarginMs }

    /// The token endpoint's answer, received at `now`: `access_token` and `expires_in` (seconds),
    /// `token_type` Bearer (RFC 6749 §5.1). An error answer (RFC 6749 §5.2) or anything else is
    /// ``GooglePlayError/credentials(_:)`` with Google's `error` code, never the body.
    package static func granted(_ body: [UInt8], at now: Int64) throws(GooglePlayError) -> AccessToken {
        guard let value = try? JSONValue.parse(body), case .object = value else {
            throw .credentials("the token endpoint's answer is not JSON")
        }
        if let error = value["error"]?.string {
            throw .credentials("the token endpoint refused the service account: \(error.prefix(64))")
        }
        guard let token = value["access_token"]?.string, let seconds = value["expires_in"]?.int64, seconds > 0,
            value["token_type"]?.string?.lowercased() == "bearer"
        else {
            throw .credentials("the token endpoint's answer has no bearer access token with an expiry")
        }
        return AccessToken(value: token, expiresAt: now + seconds * 1_000)
    }

    package var description: String { "access token (expires at \(expiresAt))" }
}
