import SignedData
import X509

/// Apple's test PKI (Fixtures/SignedData, SOURCES.md there): its root is the trust anchor in
/// tests, and its leaf key signs every V2 notification and StoreKit 2 transaction they send.
package enum TestPKI {
    package static let root = try! Certificate(derEncoded: Fixtures.bytes("SignedData/testCA.der"))
    package static let signer = try! JWSSigner(
        keyPEM: Fixtures.text("SignedData/testLeaf.key"),
        chainPEM: [
            Fixtures.text("SignedData/testLeaf.pem"), Fixtures.text("SignedData/testIntermediate.pem"),
            Fixtures.text("SignedData/testCA.pem"),
        ])
}
