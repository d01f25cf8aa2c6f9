import Crypto
import FoundationEssentials

/// The Standard Webhooks header set (standardwebhooks.com, "Signature scheme"), which an endpoint
/// may ask for beside `Receiptd-Signature` so that its receiver verifies with the official
/// libraries: `webhook-id` (the message id, the same on every retry), `webhook-timestamp` (Unix
/// seconds) and `webhook-signature`, space-separated `v1,<base64>` entries, one per active secret,
/// each the HMAC-SHA256 of `"<id>.<timestamp>.<raw body>"` under the secret's key. A secret is
/// `whsec_` followed by the key in base64. Pure: signing and checking, byte for byte, so the
/// sender and `receiptd webhook-sink` share one definition.
package enum StandardWebhooksSignature {
    package static let secretPrefix = "whsec_"
    /// The key sizes the scheme recommends (24 to 64 bytes).
    package static let keyBytes = 24...64

    /// The key a `whsec_` secret holds: base64 (padding optional) after the prefix; nil when the
    /// text is not one or its key is outside ``keyBytes``.
    package static func key(_ secret: String) -> [UInt8]? {
        guard secret.hasPrefix(secretPrefix) else { return nil }
        var encoded = String(secret.dropFirst(secretPrefix.count))
        while encoded.utf8.count % 4 != 0 { encoded += "=" }
        guard let data = Data(base64Encoded: encoded), keyBytes.contains(data.count) else { return nil }
        return Array(data)
    }

    /// The three header lines for `body`, message `id`, sent at `timestamp` (Unix seconds), signed
    /// with each of `secrets` (each must be a ``key(_:)``; configuration refuses any other).
    package static func headers(id: String, timestamp: Int64, body: [UInt8], secrets: [String]) -> [String] {
        let signatures = secrets.compactMap(key).map {
            "v1," + Data(mac(id: id, timestamp: timestamp, body: body, key: $0)).base64EncodedString()
        }
        return [
            "webhook-id: \(id)", "webhook-timestamp: \(timestamp)", "webhook-signature: " + signatures.joined(separator: " "),
        ]
    }

    /// Checks a delivery's three header values against the receiver's `secrets` (any one matching
    /// is enough), and that the timestamp is within `tolerance` seconds of `now`.
    package static func verify(
        id: String?, timestamp: String?, signature: String?, body: [UInt8], secrets: [String], now: Int64,
        tolerance: Int64 = 300
    ) -> WebhookSignature.Verdict {
        guard let id, !id.isEmpty, let timestamp, let seconds = Int64(timestamp), let signature else { return .malformed }
        var offered: [[UInt8]] = []
        for entry in signature.split(separator: " ") {
            let parts = entry.split(separator: ",", maxSplits: 1)
            guard parts.count == 2 else { return .malformed }
            guard parts[0] == "v1" else { continue }  // another scheme: ignored, as receivers should
            guard let bytes = Data(base64Encoded: String(parts[1])) else { return .malformed }
            offered.append(Array(bytes))
        }
        guard !offered.isEmpty else { return .malformed }
        let matched = secrets.compactMap(key).contains { key in
            let expected = mac(id: id, timestamp: seconds, body: body, key: key)
            return offered.contains { WebhookSignature.constantTimeEqual($0, expected) }
        }
        guard matched else { return .mismatch }
        return abs(now - seconds) <= tolerance ? .valid : .stale
    }

    static func mac(id: String, timestamp: Int64, body: [UInt8], key: [UInt8]) -> [UInt8] {
        var message = Array("\(id).\(timestamp).".utf8)
        message += body
        return Array(HMAC<SHA256>.authenticationCode(for: message, using: SymmetricKey(data: key)))
    }
}
