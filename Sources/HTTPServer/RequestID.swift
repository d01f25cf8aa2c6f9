import Synchronization

/// Request ids: taken from `X-Request-Id` when it is well-formed, otherwise made here.
public enum RequestID {
    /// Longest accepted incoming id.
    static let maxLength = 128

    /// The incoming id if it is 1–128 bytes of `[A-Za-z0-9._:-]`; anything else is replaced, so a
    /// client cannot inject text into logs through it.
    static func take(from headers: HTTPHeaders) -> String? {
        guard let value = headers[first: "X-Request-Id"], !value.isEmpty, value.utf8.count <= maxLength else {
            return nil
        }
        for c in value.utf8 {
            switch c {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."),
                UInt8(ascii: ":"):
                continue
            default:
                return nil
            }
        }
        return value
    }

    /// Makes ids unique within the process and, through a random prefix, across restarts:
    /// `<16 hex random>-<counter hex>`.
    final class Generator: Sendable {
        private let prefix: String
        private let counter = Atomic<UInt64>(0)

        init() {
            let random = UInt64.random(in: .min ... .max)
            let hex = String(random, radix: 16)
            prefix = String(repeating: "0", count: 16 - hex.count) + hex
        }

        func next() -> String {
            let n = counter.wrappingAdd(1, ordering: .relaxed).newValue
            return prefix + "-" + String(n, radix: 16)
        }
    }
}
