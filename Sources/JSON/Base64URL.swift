import FoundationEssentials

/// Base64url without padding (RFC 7515 §2): how JWS and JWT write their parts, which are JSON
/// (Apple's signed data, the App Store Server API's token, Google's service-account assertion).
public enum Base64URL {
    public static func encode(_ bytes: [UInt8]) -> String {
        var text = Data(bytes).base64EncodedString()
        while text.last == "=" { text.removeLast() }
        return String(text.map { $0 == "+" ? "-" : $0 == "/" ? "_" : $0 })
    }

    /// The bytes, or nil on any character outside the alphabet (padding included) or a length
    /// no encoding has.
    public static func decode(_ part: some Collection<UInt8>) -> [UInt8]? {
        var text = [UInt8]()
        text.reserveCapacity(part.count + 3)
        for c in part {
            switch c {
            case UInt8(ascii: "-"): text.append(UInt8(ascii: "+"))
            case UInt8(ascii: "_"): text.append(UInt8(ascii: "/"))
            case UInt8(ascii: "+"), UInt8(ascii: "/"), UInt8(ascii: "="): return nil
            default: text.append(c)
            }
        }
        guard text.count % 4 != 1 else { return nil }
        while text.count % 4 != 0 { text.append(UInt8(ascii: "=")) }
        return Data(base64Encoded: Data(text)).map { Array($0) }
    }
}
