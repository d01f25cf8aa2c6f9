package import Crypto
package import FoundationEssentials
import JSON

/// The signed requests StoreKit takes since 2025 (Apple's "Generating JWS to sign App Store
/// requests", https://developer.apple.com/documentation/storekit/generating-jws-to-sign-app-store-requests):
/// a compact JWS, ES256 by the In-App Purchase key, header `alg`, `kid`, `typ`; claims `iss` (the
/// issuer id), `bid`, `aud` (what the request is), `iat` (UNIX seconds), `nonce` (a UUID), and the
/// request's own claims:
///
/// - a **promotional offer** (`aud` `promotional-offer`): `productId`, `offerIdentifier`, and the
///   customer's `transactionId` (any of theirs, or their `appTransactionId`) when known;
/// - an **introductory offer eligibility** decision (`aud` `introductory-offer-eligibility`):
///   `productId`, `allowIntroductoryOffer`, `transactionId`.
///
/// The claims are those of Apple's App Store Server Library's `PromotionalOfferV2SignatureCreator`
/// and `IntroductoryOfferEligibilitySignatureCreator`, against which the CI's oracle compares ours.
/// Pure: the nonce and the time are given.
package enum OfferJWS {
    package enum Request: Sendable, Equatable {
        case promotionalOffer(productID: String, offerID: String, transactionID: String?)
        case introductoryOfferEligibility(productID: String, allowIntroductoryOffer: Bool, transactionID: String)

        package var audience: String {
            switch self {
            case .promotionalOffer: "promotional-offer"
            case .introductoryOfferEligibility: "introductory-offer-eligibility"
            }
        }

        var claims: [String: JSONValue] {
            switch self {
            case .promotionalOffer(let product, let offer, let transaction):
                var claims: [String: JSONValue] = ["productId": .string(product), "offerIdentifier": .string(offer)]
                if let transaction { claims["transactionId"] = .string(transaction) }
                return claims
            case .introductoryOfferEligibility(let product, let allow, let transaction):
                return [
                    "productId": .string(product), "allowIntroductoryOffer": .bool(allow), "transactionId": .string(transaction),
                ]
            }
        }
    }

    /// The compact JWS of `request` for `bundleID`, issued at `issuedAt` (UNIX seconds).
    package static func sign(
        _ request: Request, bundleID: String, keyID: String, issuerID: String, key: P256.Signing.PrivateKey, nonce: UUID,
        issuedAt: Int64
    ) throws -> String {
        let header = JSONValue.object(strings: ["alg": .string("ES256"), "kid": .string(keyID), "typ": .string("JWT")])
        var claims = request.claims
        claims["iss"] = .string(issuerID)
        claims["bid"] = .string(bundleID)
        claims["aud"] = .string(request.audience)
        claims["iat"] = .int(issuedAt)
        claims["nonce"] = .string(nonce.uuidString.lowercased())
        let input = Base64URL.encode(header.jsonBytes) + "." + Base64URL.encode(JSONValue.object(strings: claims).jsonBytes)
        let signature = try key.signature(for: Array(input.utf8))
        return input + "." + Base64URL.encode(Array(signature.rawRepresentation))
    }
}
