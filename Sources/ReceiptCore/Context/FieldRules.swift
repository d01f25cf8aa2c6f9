import Analytics
import AppStore
import FoundationEssentials

/// The bounds every identifier from a client must keep, wherever it arrives (a body, a path):
/// stored text stays short, printable and unambiguous, and bad input is refused with the field's
/// name before anything is read or written.
package enum FieldRules {
    /// An app's own user id: 1–256 bytes of UTF-8 with no control characters (C0, DEL, C1), no
    /// Unicode format characters (bidi overrides, zero-width joiners) and no line or paragraph
    /// separators, and not blank. Anything else an app uses (UUIDs, e-mail addresses, names in any
    /// script) is kept exactly as sent.
    static let maxAppUserIDBytes = 256

    package static func isValidAppUserID(_ id: String) -> Bool {
        guard !id.isEmpty, id.utf8.count <= maxAppUserIDBytes else { return false }
        return asciiVerdict(id) ?? isShownByCategories(id)
    }

    /// ``isShownByCategories(_:)`` of an ASCII id without the Unicode tables (an id is most often
    /// ASCII): C0 and DEL are controls, the space a space separator, every other byte a letter,
    /// digit or mark. Nil past ASCII.
    static func asciiVerdict(_ id: String) -> Bool? {
        var blank = true
        for byte in id.utf8 {
            guard byte < 0x80 else { return nil }
            if byte < 0x20 || byte == 0x7F { return false }
            if byte != 0x20 { blank = false }
        }
        return !blank
    }

    /// Whether every scalar of `id` can be shown and compared (no control, format, line or
    /// paragraph separator, surrogate, private or unassigned code point) and one is more than a
    /// space, by Unicode's general categories.
    static func isShownByCategories(_ id: String) -> Bool {
        var blank = true
        for scalar in id.unicodeScalars {
            switch scalar.properties.generalCategory {
            case .control, .format, .lineSeparator, .paragraphSeparator, .surrogate, .privateUse, .unassigned:
                return false
            case .spaceSeparator: continue
            default: blank = false
            }
        }
        return !blank
    }

    package static func appUserID(_ id: String, field: String = "app_user_id") throws(ReceiptError) -> String {
        guard isValidAppUserID(id) else {
            throw .invalidRequest(
                "`\(field)` must be 1 to \(maxAppUserIDBytes) bytes of UTF-8, not blank, without control or format characters.")
        }
        return id
    }

    /// `receipt_data` that could be a receipt: canonical base64 (RFC 4648 §4: only the alphabet,
    /// a length that is a multiple of 4, at most two `=` and only at the end) of at least 4 bytes
    /// (a PKCS#7 app receipt is kilobytes; the simulator's scripted receipts are short text, so
    /// the shape of the bytes is not checked). Anything else is refused here rather than sent to
    /// Apple, whose 21002 for it would say nothing (500,000 `=` decode to nothing).
    static func isPlausibleReceipt(_ text: String) -> Bool {
        let bytes = text.utf8
        guard bytes.count >= 8, bytes.count % 4 == 0 else { return false }
        var padding = 0
        for b in bytes {
            let inAlphabet =
                (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || (b >= 0x30 && b <= 0x39) || b == 0x2B || b == 0x2F
            if b == 0x3D {
                padding += 1
            } else if !inAlphabet || padding > 0 {
                return false  // outside the alphabet, or data after padding
            }
        }
        return padding <= 2 && bytes.count / 4 * 3 - padding >= 4
    }

    /// A bundle identifier as Apple allows it (reverse DNS: letters, digits, `.`, `-`; `_` seen in
    /// old apps), at most 155 characters (App Store Connect's limit).
    package static func isValidBundleID(_ id: String) -> Bool {
        guard (1...155).contains(id.utf8.count) else { return false }
        return id.utf8.allSatisfy { b in
            (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || b == 0x2E || b == 0x2D
                || b == 0x5F
        }
    }

    /// A receipt's base64 text: Apple's receipts for years of renewals stay well below this.
    package static let maxReceiptBytes = 512 * 1024
    /// A StoreKit 2 JWS.
    package static let maxJWSBytes = 65_536

    /// `receipt_data` within bounds and plausible (``isPlausibleReceipt(_:)``).
    package static func receipt(_ text: String) throws(ReceiptError) {
        guard !text.isEmpty, text.utf8.count <= maxReceiptBytes else {
            throw .invalidRequest("`receipt_data` must be a non-empty base64 string of at most \(maxReceiptBytes) bytes.")
        }
        guard isPlausibleReceipt(text) else {
            throw .invalidRequest("`receipt_data` is not a receipt: canonical base64 of at least 4 bytes.")
        }
    }

    /// A transaction id to ask the App Store Server API about: Apple's are decimal digits
    /// (``AppleIdentifier/Kind/transaction``); anything else could never name one, and must never
    /// reach a URL path.
    package static func transactionID(_ id: String, field: String = "transaction_id") throws(ReceiptError) {
        guard AppleIdentifier.isValid(id, as: .transaction) else {
            throw .invalidRequest(
                "`\(field)` must be an Apple transaction id: 1 to \(AppleIdentifier.Kind.transaction.maxBytes) decimal digits.")
        }
    }

    /// A transaction id as stored: Apple's (decimal digits), or Google Play's order id (`GPA.…`)
    /// or purchase reference (`GPT.…`): letters, digits, `.`, `-` and `_`, at most 164 bytes. Looked
    /// up in storage only, never sent anywhere.
    package static func storedTransactionID(_ id: String, field: String = "transaction_id") throws(ReceiptError) {
        if AppleIdentifier.isValid(id, as: .transaction) { return }
        let play =
            (id.hasPrefix("GPA.") || id.hasPrefix("GPT.")) && (5...164).contains(id.utf8.count)
            && id.utf8.allSatisfy { b in
                (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || b == 0x2E || b == 0x2D
                    || b == 0x5F
            }
        guard play else {
            throw .invalidRequest(
                "`\(field)` must be an Apple transaction id (decimal digits) or a Google Play order id (`GPA.…`) or reference (`GPT.…`)."
            )
        }
    }

    /// The order id on a customer's Apple invoice: letters and digits (e.g. `MQ3ZY1C2XV`).
    package static func orderID(_ id: String) throws(ReceiptError) {
        guard AppleIdentifier.isValid(id, as: .order) else {
            throw .invalidRequest(
                "`order_id` must be an Apple order id: 1 to \(AppleIdentifier.Kind.order.maxBytes) letters and digits.")
        }
    }

    /// A signed transaction or renewal info within bounds.
    package static func jws(_ text: String, field: String) throws(ReceiptError) {
        guard !text.isEmpty, text.utf8.count <= maxJWSBytes else {
            throw .invalidRequest("`\(field)` must be a JWS string of at most \(maxJWSBytes) bytes.")
        }
    }

    /// A non-negative amount with at most three decimal places (`9.99`, `120`) in milliunits;
    /// nil for anything else (exponents, signs, more places, more than nine digits of units).
    package static func milliunits(_ text: String) -> Int64? {
        guard text.split(separator: ".").first.map({ $0.count <= 9 }) == true else { return nil }
        return Money.decimal(text, places: 3)
    }

    /// `bundle_id` as Apple allows it (``isValidBundleID(_:)``).
    package static func bundleID(_ id: String) throws(ReceiptError) {
        guard isValidBundleID(id) else {
            throw .invalidRequest("`bundle_id` must be a bundle identifier: 1 to 155 letters, digits, `.`, `-` or `_`.")
        }
    }

    /// `2026-11-01` (UTC midnight) or an RFC 3339 time (`2026-11-01T12:00:00Z`) as epoch
    /// milliseconds; nil when it is neither.
    package static func instant(_ text: String) -> Int64? {
        guard text.utf8.count <= 40 else { return nil }
        let full = text.utf8.count == 10 ? text + "T00:00:00Z" : text
        guard let date = try? Date(full, strategy: .iso8601) else { return nil }
        return Int64((date.timeIntervalSince1970 * 1000).rounded())
    }
}
