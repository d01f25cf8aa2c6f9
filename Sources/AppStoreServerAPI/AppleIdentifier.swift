/// An id that names something at Apple and goes into an App Store Server API path, held only
/// once it has the format Apple gives that kind of id (Docs/security.md "Ids in upstream URLs").
///
/// Every format is a run of ASCII letters, digits, `-` or `_`: never empty, never `.` or `..`,
/// never `/`, `%`, `?` or `#`. So an id is always exactly one path segment, whatever a proxy,
/// libcurl or Apple's front end makes of dot segments or escapes, and a client's text can never
/// reach another endpoint.
public struct AppleIdentifier: Sendable, Hashable, CustomStringConvertible {
    public enum Kind: String, Sendable, CaseIterable {
        /// `transactionId`, `originalTransactionId`, `appTransactionId`: decimal digits.
        case transaction = "transaction id"
        /// The order id on a customer's App Store invoice (`MQ3ZY1C2XV`): letters and digits.
        case order = "order id"
        /// `testNotificationToken`, as Request a Test Notification returns it (a UUID, `_`, a time).
        case testNotificationToken = "test notification token"

        /// Longest accepted, in bytes: Apple's are far shorter (16–20 digits, 10 characters, ~50).
        public var maxBytes: Int { self == .testNotificationToken ? 128 : 64 }

        func allows(_ byte: UInt8) -> Bool {
            let digit = byte >= 0x30 && byte <= 0x39
            let letter = (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
            return switch self {
            case .transaction: digit
            case .order: digit || letter
            case .testNotificationToken: digit || letter || byte == 0x2D || byte == 0x5F
            }
        }
    }

    public let kind: Kind
    public let text: String

    /// nil unless `text` has `kind`'s format.
    public init?(_ text: String, _ kind: Kind) {
        guard Self.isValid(text, as: kind) else { return nil }
        self.kind = kind
        self.text = text
    }

    public static func isValid(_ text: String, as kind: Kind) -> Bool {
        (1...kind.maxBytes).contains(text.utf8.count) && text.utf8.allSatisfy(kind.allows)
    }

    /// The id as one percent-encoded path segment. Every byte of a valid id is unreserved (RFC 3986
    /// §2.3), so this is the text itself; the encoding is kept so the rule holds by construction.
    public var pathSegment: String { ServerAPIEndpoint.escaped(text) }

    public var description: String { text }
}
