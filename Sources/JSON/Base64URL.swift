/// Base64url without padding (RFC 7515 §2): how JWS and JWT write their parts, which are JSON
/// (Apple's signed data, the App Store Server API's token, Google's service-account assertion).
/// Table-driven over bytes: every signed request's header (three certificates) passes through
/// `decode`, so it is on the hot path of Apple's notifications and real-time requests.
public enum Base64URL {
    static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
    /// Each byte's six bits, or 0xFF for a byte outside the alphabet (padding included).
    static let values: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (i, c) in alphabet.enumerated() { table[Int(c)] = UInt8(i) }
        return table
    }()

    public static func encode(_ bytes: [UInt8]) -> String {
        var out = [UInt8]()
        out.reserveCapacity((bytes.count * 4 + 2) / 3)
        func put(_ n: UInt32, _ count: Int) {
            for shift in stride(from: 18, to: 18 - 6 * count, by: -6) { out.append(alphabet[Int((n >> UInt32(shift)) & 63)]) }
        }
        var i = 0
        while i + 3 <= bytes.count {
            put(UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8 | UInt32(bytes[i + 2]), 4)
            i += 3
        }
        switch bytes.count - i {
        case 1: put(UInt32(bytes[i]) << 16, 2)
        case 2: put(UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8, 3)
        default: break
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The bytes, or nil on any character outside the alphabet (padding included) or a length
    /// no encoding has. Bits left over after the last whole byte are ignored, as Foundation's
    /// decoder ignores them.
    public static func decode(_ part: some Collection<UInt8>) -> [UInt8]? {
        if let decoded = part.withContiguousStorageIfAvailable({ decode(buffer: $0) }) { return decoded }
        return Array(part).withUnsafeBufferPointer { decode(buffer: $0) }
    }

    static func decode(buffer: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        guard buffer.count % 4 != 1 else { return nil }
        var out = [UInt8]()
        out.reserveCapacity(buffer.count * 3 / 4)
        var bits: UInt32 = 0
        var held = 0
        for c in buffer {
            let v = values[Int(c)]
            guard v != 0xFF else { return nil }
            bits = bits << 6 | UInt32(v)
            held += 6
            if held >= 8 {
                held -= 8
                out.append(UInt8(truncatingIfNeeded: bits >> UInt32(held)))
            }
        }
        return out
    }
}
