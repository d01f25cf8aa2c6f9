package import Entitlements
package import JSON

/// An App Store Server Notification V1 body (`responseBodyV1`, Docs/apple-protocols.md §2.2), read
/// tolerantly. Unsigned: its only proof of origin is `password`, the app's shared secret.
package struct NotificationV1: Sendable, Equatable {
    /// §2.3, e.g. `.didRenew`; a type Apple added since, kept as sent.
    package var notificationType: NotificationTypeV1
    package var password: String?
    /// The app's bundle id.
    package var bundleID: String?
    /// `PROD` (documented), `Production` (seen) or `Sandbox`.
    package var environment: StoreEnvironment?
    package var originalTransactionID: String?
    package var autoRenewStatusChangeDateMs: Int64?
    /// `unified_receipt` read as a verifyReceipt answer: the same transactions, renewal info and
    /// latest receipt (§2.2: same shapes).
    package var unifiedReceipt: VerifyReceiptResponse?
    package var raw: JSONValue

    /// Nil when `v` is not a V1 notification; throws when it is one whose dates are out of range
    /// (its `unified_receipt` included): such a body is refused, not stored without its facts.
    package init?(_ v: JSONValue) throws(AppleDate.OutOfRange) {
        guard let type = v["notification_type"]?.string else { return nil }
        notificationType = NotificationTypeV1(type)
        password = v["password"]?.string
        bundleID = v["bid"]?.string
        environment = v["environment"]?.string.flatMap {
            $0.uppercased() == "PROD" ? .production : StoreEnvironment(appleName: $0)
        }
        originalTransactionID = v["original_transaction_id"]?.string
        autoRenewStatusChangeDateMs = try v.date("auto_renew_status_change_date_ms")
        if let unified = v["unified_receipt"] {
            do {
                unifiedReceipt = try VerifyReceiptResponse(unified)
            } catch {
                if let outOfRange = error.outOfRange { throw outOfRange }
                unifiedReceipt = nil
            }
        } else {
            unifiedReceipt = nil
        }
        raw = v
    }

    /// The body without its password: what may be stored and hashed.
    package var redacted: JSONValue {
        guard case .object(var fields) = raw, fields["password"] != nil else { return raw }
        fields["password"] = .string("<redacted>")
        return .object(fields)
    }
}
