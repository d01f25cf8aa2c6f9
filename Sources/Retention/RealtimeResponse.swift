import FoundationEssentials
package import JSON

/// Apple's `RealtimeResponseBody` for an answer: exactly one of `message`, `alternateProduct`,
/// `promotionalOffer`, each with its `messageIdentifier` (Apple's Retention Messaging docs,
/// "RealtimeResponseBody"; the members as Apple's server libraries model them). No answer is
/// `{}`: Apple shows the default message configured for the product and locale.
package enum RealtimeResponse {
    /// The signed promotional offer a `promotionalOffer` answer carries.
    package enum OfferSignature: Sendable, Equatable {
        /// `promotionalOfferSignatureV1`: the original API's signature and what it signed.
        case v1(
            encodedSignature: String, productID: String, offerID: String, nonce: String, timestamp: Int64, keyID: String,
            appAccountToken: String?)
        /// `promotionalOfferSignatureV2`: StoreKit's 2025 signed request, a compact JWS.
        case jws(String)
    }

    package static func body(_ answer: RetentionAnswer?, signature: OfferSignature? = nil) -> JSONValue {
        guard let answer else { return .object([:]) }
        let message: JSONValue = .string(answer.message.uuidString.lowercased())
        switch answer {
        case .message:
            return .object(["message": .object(["messageIdentifier": message])])
        case .alternateProduct(_, let product):
            return .object(["alternateProduct": .object(["messageIdentifier": message, "productId": .string(product)])])
        case .promotionalOffer:
            var offer: [Identifier: JSONValue] = ["messageIdentifier": message]
            switch signature {
            case .jws(let jws):
                offer["promotionalOfferSignatureV2"] = .string(jws)
            case .v1(let encoded, let product, let offerID, let nonce, let timestamp, let keyID, let token):
                var v1: [Identifier: JSONValue] = [
                    "encodedSignature": .string(encoded), "productId": .string(product), "offerIdentifier": .string(offerID),
                    "nonce": .string(nonce), "timestamp": .int(timestamp), "keyId": .string(keyID),
                ]
                if let token { v1["appAccountToken"] = .string(token) }
                offer["promotionalOfferSignatureV1"] = .object(v1)
            case nil:
                break
            }
            return .object(["promotionalOffer": .object(offer)])
        }
    }
}
