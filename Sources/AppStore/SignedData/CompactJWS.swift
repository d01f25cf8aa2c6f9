import FoundationEssentials
import JSON

/// A JWS in compact serialization (RFC 7515 §7.1), split and decoded but **not verified**: nothing
/// here may be trusted until ``SignedDataVerifier`` has checked it.
struct CompactJWS: Sendable {
    var header: JSONValue
    var payload: JSONValue
    /// `base64url(header) + "." + base64url(payload)`: the bytes the signature covers.
    var signingInput: [UInt8]
    var signature: [UInt8]

    init(_ text: String) throws(SignedDataError) {
        let parts = text.utf8.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard parts.count == 3 else { throw .malformed("a JWS has three dot-separated parts, this has \(parts.count)") }
        guard let headerBytes = Self.base64URLDecode(parts[0]), let header = try? JSONValue.parse(headerBytes),
            case .object = header
        else { throw .malformed("the header is not base64url JSON") }
        guard let payloadBytes = Self.base64URLDecode(parts[1]), let payload = try? JSONValue.parse(payloadBytes),
            case .object = payload
        else { throw .malformed("the payload is not base64url JSON") }
        guard let signature = Self.base64URLDecode(parts[2]) else { throw .malformed("the signature is not base64url") }
        self.header = header
        self.payload = payload
        self.signature = signature
        signingInput = Array(parts[0]) + [UInt8(ascii: ".")] + Array(parts[1])
    }

    /// Base64url without padding (``JSON/Base64URL``); nil on any character outside the alphabet.
    static func base64URLDecode(_ part: some Collection<UInt8>) -> [UInt8]? { Base64URL.decode(part) }
}
