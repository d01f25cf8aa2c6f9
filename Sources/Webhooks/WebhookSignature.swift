import Crypto

/// The `Receiptd-Signature` header (Docs/webhooks.md): `t=<unix seconds>,v1=<hex>` with one `v1`
/// per active secret, each the HMAC-SHA256 under that secret of `"<t>.<raw body>"`. Pure: signing
/// and checking, byte for byte, so the sender and `receiptd webhook-sink` share one definition.
package enum WebhookSignature {
    /// The header's value for `body` sent at `timestamp` (Unix seconds).
    package static func header(body: [UInt8], secrets: [String], timestamp: Int64) -> String {
        "t=\(timestamp)" + secrets.map { ",v1=" + hex(mac(body: body, secret: $0, timestamp: timestamp)) }.joined()
    }

    /// What checking a signature found.
    package enum Verdict: String, Sendable, Equatable {
        case valid
        /// No `t`, no `v1`, or not the header's syntax.
        case malformed
        /// No `v1` matches any of the receiver's secrets.
        case mismatch
        /// `t` is further than the tolerance from now: a replay, or a clock far off.
        case stale
    }

    /// Checks `header` on `body` against the receiver's `secrets` (any one matching is enough), and
    /// that `t` is within `tolerance` seconds of `now` (Unix seconds).
    package static func verify(header: String, body: [UInt8], secrets: [String], now: Int64, tolerance: Int64 = 300) -> Verdict {
        var timestamp: Int64?
        var signatures: [[UInt8]] = []
        for part in header.split(separator: ",", omittingEmptySubsequences: false) {
            let pair = part.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard pair.count == 2 else { return .malformed }
            switch pair[0] {
            case "t":
                guard timestamp == nil, let t = Int64(pair[1]), t >= 0 else { return .malformed }
                timestamp = t
            case "v1":
                guard let bytes = unhex(pair[1]), bytes.count == 32 else { return .malformed }
                signatures.append(bytes)
            default: continue  // a later scheme: ignored, as receivers should
            }
        }
        guard let timestamp, !signatures.isEmpty else { return .malformed }
        var matched = false
        for secret in secrets {
            let expected = mac(body: body, secret: secret, timestamp: timestamp)
            for signature in signatures where constantTimeEqual(signature, expected) { matched = true }
        }
        guard matched else { return .mismatch }
        return abs(now - timestamp) <= tolerance ? .valid : .stale
    }

    static func mac(body: [UInt8], secret: String, timestamp: Int64) -> [UInt8] {
        var message = Array("\(timestamp).".utf8)
        message += body
        return Array(HMAC<SHA256>.authenticationCode(for: message, using: SymmetricKey(data: Array(secret.utf8))))
    }

    static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for i in a.indices { difference |= a[i] ^ b[i] }
        return difference == 0
    }

    static let digits = Array("0123456789abcdef".utf8)

    static func hex(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count * 2)
        for b in bytes {
            out.append(digits[Int(b >> 4)])
            out.append(digits[Int(b & 15)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    static func unhex(_ text: Substring) -> [UInt8]? {
        let chars = Array(text.utf8)
        guard chars.count % 2 == 0 else { return nil }
        func value(_ c: UInt8) -> UInt8? {
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
            default: nil
            }
        }
        var out: [UInt8] = []
        var i = 0
        while i < chars.count {
            guard let high = value(chars[i]), let low = value(chars[i + 1]) else { return nil }
            out.append(high << 4 | low)
            i += 2
        }
        return out
    }
}
