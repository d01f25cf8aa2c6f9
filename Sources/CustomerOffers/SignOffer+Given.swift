import Storage

extension SignOffer {
    /// A signature given, as support sees it (``SignOffer/overview(_:limit:)``).
    package struct Given: Sendable, Equatable {
        package var id: Int64
        /// `promotional` or `introductory`.
        package var kind: String
        package var productID: String
        package var offerID: String?
        /// `v1` or `jws`.
        package var format: String
        package var keyID: String
        /// For an introductory decision: whether it allowed the offer (a promotional one: always true).
        package var allowed: Bool
        package var requestedBy: String
        package var issuedAt: Int64
    }
}

extension SignOffer.Given {
    init(_ r: OfferSignatureRecord) {
        self.init(
            id: r.id, kind: r.kind, productID: r.productID, offerID: r.offerID, format: r.format, keyID: r.keyID,
            allowed: r.allowed, requestedBy: r.requestedBy, issuedAt: r.issuedAt)
    }
}
