import JSON

/// Dates in Apple's data: epoch milliseconds, as a number or a string of digits (Docs/apple-protocols.md
/// §1.4, §3.5). Every date read from outside (verifyReceipt answers, notifications, signed data,
/// stored rows) is checked against ``range`` where it enters, so no arithmetic on dates anywhere
/// in receiptd can overflow: the largest date plus the longest period or delay stays far inside
/// `Int64`.
package enum AppleDate {
    /// 1970-01-01T00:00:00Z through 9999-12-31T23:59:59.999Z (what RFC 3339 can print).
    package static let range: ClosedRange<Int64> = 0...253_402_300_799_999

    /// A member that holds something other than a date in ``range``.
    package struct OutOfRange: Error, Sendable, Equatable, CustomStringConvertible {
        /// The member's name, e.g. `expires_date_ms`.
        package let field: String
        package init(field: String) { self.field = field }
        package var description: String {
            "`\(field)` is not a date between 1970 and 9999 in epoch milliseconds"
        }
    }
}

extension JSONValue {
    /// The date in member `key`: nil when the member is absent, null or an empty string; the
    /// epoch milliseconds when they are an integer in ``AppleDate/range``; anything else (digits
    /// past `Int64`, a negative or far-future date, text) is refused, never read as "no date".
    package func date(_ key: String) throws(AppleDate.OutOfRange) -> Int64? {
        switch self[key] {
        case nil, .null?: return nil
        case .string(let s)? where s.isEmpty: return nil
        case let value?:
            guard let ms = value.int64, AppleDate.range.contains(ms) else { throw AppleDate.OutOfRange(field: key) }
            return ms
        }
    }
}
