/// An id that names something at Apple and goes into an App Store Server API path, held only
/// once it has the format Apple gives that kind of id (Docs/security.md "Ids in upstream URLs").
///
/// Every format is a run of ASCII letters, digits, `-` or `_` (a product id's also `.`, though
/// never dots alone): never empty, never `.` or `..`, never `/`, `%`, `?` or `#`. So an id is always
/// exactly one path segment, whatever a proxy, libcurl or Apple's front end makes of dot segments
/// or escapes, and a client's text can never reach another endpoint.
package struct AppleIdentifier: Sendable, Hashable, CustomStringConvertible {
    package enum Kind: String, Sendable, CaseIterable {
        /// `transactionId`, `originalTransactionId`, `appTransactionId`: decimal digits.
        case transaction = "transaction id"
        /// The order id on a customer's App Store invoice (`MQ3ZY1C2XV`): letters and digits.
        case order = "order id"
        /// `testNotificationToken`, as Request a Test Notification returns it (a UUID, `_`, a time).
        case testNotificationToken = "test notification token"
        /// A product id from App Store Connect (`com.example.premium.monthly`): letters, digits,
        /// `.`, `_` and `-`, not dots alone.
        case productID = "product id"
        /// The `requestIdentifier` receiptd gives a mass extension (a UUID): letters, digits, `-`.
        case requestIdentifier = "request identifier"

        /// Longest accepted, in bytes: Apple's are far shorter (16–20 digits, 10 characters, ~50),
        /// and a UUID is 36.
        package var maxBytes: Int {
            switch self {
            case .transaction, .order: 64
            case .testNotificationToken, .productID, .requestIdentifier: 128
            }
        }

        func allows(_ byte: UInt8) -> Bool {
            let digit = byte >= 0x30 && byte <= 0x39
            let letter = (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
            return switch self {
            case .transaction: digit
            case .order: digit || letter
            case .testNotificationToken: digit || letter || byte == 0x2D || byte == 0x5F
            case .productID: digit || letter || byte == 0x2D || byte == 0x5F || byte == 0x2E
            case .requestIdentifier: digit || letter || byte == 0x2D
            }
        }
    }

    package let kind: Kind
    package let text: String

    /// nil unless `text` has `kind`'s format.
    package init?(_ text: String, _ kind: Kind) {
        guard Self.isValid(text, as: kind) else { return nil }
        self.kind = kind
        self.text = text
    }

    package static func isValid(_ text: String, as kind: Kind) -> Bool {
        (1...kind.maxBytes).contains(text.utf8.count) && text.utf8.allSatisfy(kind.allows)
            && !text.utf8.allSatisfy { $0 == 0x2E }
    }

    /// The id as one percent-encoded path segment. Every byte of a valid id is unreserved (RFC 3986
    /// §2.3), so this is the text itself; the encoding is kept so the rule holds by construction.
    package var pathSegment: String { ServerAPIEndpoint.escaped(text) }

    package var description: String { text }
}
