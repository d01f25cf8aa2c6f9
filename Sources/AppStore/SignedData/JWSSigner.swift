package import Crypto
import FoundationEssentials
package import JSON
import SwiftASN1
package import X509

/// Signs JSON payloads as Apple does (ES256, raw R‖S, `x5c` of three standard-base64 DER
/// certificates). receiptd never signs in service: this makes offline test data and benchmark
/// load with a test PKI, such as Apple's (`apple-test-pki/testLeaf.key`, which chains to `testCA`).
package struct JWSSigner: Sendable {
    package let key: P256.Signing.PrivateKey
    /// Leaf, intermediate, root.
    package let chain: [Certificate]

    package init(key: P256.Signing.PrivateKey, chain: [Certificate]) {
        self.key = key
        self.chain = chain
    }

    /// A PEM private key (SEC1 or PKCS#8) and PEM certificates, leaf first.
    package init(keyPEM: String, chainPEM: [String]) throws {
        key = try P256.Signing.PrivateKey(pemRepresentation: keyPEM)
        chain = try chainPEM.map { try Certificate(pemEncoded: $0) }
    }

    /// The compact JWS of `payload`, with any header fields overridden or added by `header`.
    package func sign(_ payload: JSONValue, header: [Identifier: JSONValue] = [:]) throws -> String {
        let x5c: [JSONValue] = try chain.map { certificate in
            var serializer = DER.Serializer()
            try serializer.serialize(certificate)
            return .string(Data(serializer.serializedBytes).base64EncodedString())
        }
        var fields: [Identifier: JSONValue] = ["alg": .string("ES256"), "x5c": .array(x5c)]
        fields.merge(header) { $1 }
        let input = Self.base64URL(JSONValue.object(fields).jsonBytes) + "." + Self.base64URL(payload.jsonBytes)
        let signature = try key.signature(for: Array(input.utf8))
        return input + "." + Self.base64URL(Array(signature.rawRepresentation))
    }

    /// Base64url without padding decoded; nil when it is not that.
    package static func base64URLDecoded(_ text: String) -> [UInt8]? { CompactJWS.base64URLDecode(text.utf8) }

    /// Base64url without padding (``JSON/Base64URL``).
    package static func base64URL(_ bytes: [UInt8]) -> String { Base64URL.encode(bytes) }
}
