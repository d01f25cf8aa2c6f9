/// Text that names something at Google and goes into a Play Developer API path, held only once
/// it has the format Google gives that kind of id (Docs/security.md "Ids in upstream URLs").
///
/// Every format is a run of ASCII letters, digits and a few of `-`, `_`, `.`: never empty, never
/// `.` or `..`, never `/`, `%`, `?`, `#` or `:`. So each is exactly one path segment, and a client's
/// text can never reach another endpoint or method (`…:acknowledge` is spelled by receiptd only).
package struct PlayIdentifier: Sendable, Hashable, CustomStringConvertible {
    package enum Kind: String, Sendable, CaseIterable {
        /// An app's package name (`com.example.app`): letters, digits, `_` and `.`.
        case packageName = "package name"
        /// A purchase token, as Play Billing gives the app: letters, digits, `-`, `_` and `.`.
        case purchaseToken = "purchase token"
        /// A product id (`pro_monthly`): letters, digits, `_` and `.` (Play Console also allows `-` in old ids).
        case productID = "product id"

        /// Longest accepted, in bytes. Tokens are a few hundred; Google caps product ids at 139 and
        /// package names at 255.
        package var maxBytes: Int {
            switch self {
            case .packageName: 255
            case .purchaseToken: 1_024
            case .productID: 139
            }
        }

        func allows(_ byte: UInt8) -> Bool {
            let digit = byte >= 0x30 && byte <= 0x39
            let letter = (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
            return digit || letter || byte == 0x5F || byte == 0x2E || (self != .packageName && byte == 0x2D)
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
        (1...kind.maxBytes).contains(text.utf8.count) && text != "." && text != ".." && text.utf8.allSatisfy(kind.allows)
    }

    /// The id as one path segment: every byte of a valid id is unreserved (RFC 3986 §2.3).
    package var pathSegment: String { text }

    /// A token's description is its reference, never the token.
    package var description: String { kind == .purchaseToken ? PurchaseTokenReference.of(text) : text }
}
