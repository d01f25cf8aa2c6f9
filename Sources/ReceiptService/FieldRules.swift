/// The bounds every identifier from a client must keep, wherever it arrives (a body, a path):
/// stored text stays short, printable and unambiguous, and bad input is refused with the field's
/// name before anything is read or written.
enum FieldRules {
    /// An app's own user id: 1–256 bytes of UTF-8 with no control characters (C0, DEL, C1), no
    /// Unicode format characters (bidi overrides, zero-width joiners) and no line or paragraph
    /// separators, and not blank. Anything else an app uses (UUIDs, e-mail addresses, names in any
    /// script) is kept exactly as sent.
    static let maxAppUserIDBytes = 256

    static func isValidAppUserID(_ id: String) -> Bool {
        guard !id.isEmpty, id.utf8.count <= maxAppUserIDBytes else { return false }
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

    static func appUserID(_ id: String, field: String = "app_user_id") throws(APIError) -> String {
        guard isValidAppUserID(id) else {
            throw .invalidRequest(
                "`\(field)` must be 1 to \(maxAppUserIDBytes) bytes of UTF-8, not blank, without control or format characters.")
        }
        return id
    }

    /// A bundle identifier as Apple allows it (reverse DNS: letters, digits, `.`, `-`; `_` seen in
    /// old apps), at most 155 characters (App Store Connect's limit).
    static func isValidBundleID(_ id: String) -> Bool {
        guard (1...155).contains(id.utf8.count) else { return false }
        return id.utf8.allSatisfy { b in
            (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || b == 0x2E || b == 0x2D
                || b == 0x5F
        }
    }
}
