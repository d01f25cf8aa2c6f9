package import Crypto
package import FoundationEssentials

/// The signature StoreKit asks for before it shows a promotional offer (the original API,
/// `SKPaymentDiscount` / `Product.PurchaseOption.promotionalOffer(offerID:keyID:nonce:signature:timestamp:)`):
/// ECDSA P-256 with SHA-256, by the In-App Purchase key, over the bundle id, the key id, the
/// product id, the offer id, the application username (the app account token, lowercased, or
/// empty), the nonce (a UUID, lowercased) and the timestamp (UNIX milliseconds), joined by
/// U+2063 INVISIBLE SEPARATOR; the DER signature in base64. Apple honours it for 24 hours from the
/// timestamp. Sources: Apple's "Generating a signature for promotional offers"
/// (https://developer.apple.com/documentation/storekit/generating-a-signature-for-promotional-offers)
/// and its App Store Server Library's `PromotionalOfferSignatureCreator`, whose output the CI's
/// oracle checks ours against. Pure: the nonce and the time are given.
package struct PromotionalOfferSignature: Sendable, Equatable {
    package var keyID: String
    /// Lowercase UUID.
    package var nonce: String
    /// UNIX milliseconds.
    package var timestamp: Int64
    /// Base64 of the DER ECDSA signature.
    package var signature: String

    /// The exact text signed.
    package static func payload(
        bundleID: String, keyID: String, productID: String, offerID: String, applicationUsername: String, nonce: String,
        timestamp: Int64
    ) -> String {
        [bundleID, keyID, productID, offerID, applicationUsername.lowercased(), nonce.lowercased(), String(timestamp)]
            .joined(separator: "\u{2063}")
    }

    /// Signs an offer of `offerID` on `productID` for `bundleID`'s user `applicationUsername`.
    package static func sign(
        bundleID: String, keyID: String, key: P256.Signing.PrivateKey, productID: String, offerID: String,
        applicationUsername: String = "", nonce: UUID, timestamp: Int64
    ) throws -> PromotionalOfferSignature {
        let nonceText = nonce.uuidString.lowercased()
        let text = payload(
            bundleID: bundleID, keyID: keyID, productID: productID, offerID: offerID, applicationUsername: applicationUsername,
            nonce: nonceText, timestamp: timestamp)
        let signature = try key.signature(for: Array(text.utf8))
        return PromotionalOfferSignature(
            keyID: keyID, nonce: nonceText, timestamp: timestamp, signature: signature.derRepresentation.base64EncodedString())
    }
}
