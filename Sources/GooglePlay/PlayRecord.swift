import Crypto
import Entitlements
package import JSON

/// A purchase token's stand-in wherever receiptd names a Play purchase: a token is long, and
/// with the service account's access it reads the purchase, so it is kept once (to ask Google
/// again) and named everywhere else by its digest: `GPT.` and the first 128 bits of its SHA-256
/// in hex.
package enum PurchaseTokenReference {
    package static func of(_ token: String) -> String {
        "GPT."
            + SHA256.hash(data: Array(token.utf8)).prefix(16).map { byte in
                let hex = Array("0123456789abcdef".utf8)
                return String(decoding: [hex[Int(byte >> 4)], hex[Int(byte & 0xF)]], as: UTF8.self)
            }.joined()
    }
}

/// One answer of Google's about a purchase token, with what receiptd knew when it read it and
/// the resource does not say: which app, which token, which subscription it continues, and the
/// times only receiptd can date. Stored as the raw JSON of the facts it states, so `receiptd
/// rederive` maps them again from exactly what Google sent. Reading an unchanged answer again
/// gives the same envelope (the times are those first known, never the time of reading), so it
/// rewrites nothing.
package struct PlayRecord: Sendable, Equatable {
    package enum Resource: Sendable, Equatable {
        case subscription(SubscriptionPurchase)
        case product(ProductPurchase)
    }

    package var packageName: String
    /// ``PurchaseTokenReference`` of the token.
    package var tokenReference: String
    /// The subscription this token continues: the reference of the oldest token its
    /// `linkedPurchaseToken` chain reaches that receiptd knows of; the token's own for a product.
    package var chain: String
    /// When receiptd first saw the purchase's current order (epoch ms): a pending payment's date,
    /// and a renewal's start when the period before it is unknown.
    package var seenAt: Int64
    /// When the current period began, when known from the period before it (a renewal's order
    /// names no time of its own).
    package var periodStart: Int64?
    /// When receiptd first saw a one-time purchase cancelled.
    package var cancelledAt: Int64?
    /// When Google voided the order this record states (a refund, a chargeback, a revocation),
    /// as its voided-purchase notification or the Voided Purchases API said.
    package var voidedAt: Int64?
    package var resource: Resource

    package init(
        packageName: String, tokenReference: String, chain: String, seenAt: Int64, periodStart: Int64? = nil,
        cancelledAt: Int64? = nil, voidedAt: Int64? = nil, resource: Resource
    ) {
        self.packageName = packageName
        self.tokenReference = tokenReference
        self.chain = chain
        self.seenAt = seenAt
        self.periodStart = periodStart
        self.cancelledAt = cancelledAt
        self.voidedAt = voidedAt
        self.resource = resource
    }

    /// The envelope: `{"google_play": {package_name, token, chain, seen_at, period_start?,
    /// cancelled_at?, voided_at?}, "subscriptionPurchaseV2" | "productPurchaseV2": <Google's resource as it came>}`.
    package var json: JSONValue {
        var context: [String: JSONValue] = [
            "package_name": .string(packageName), "token": .string(tokenReference), "chain": .string(chain),
            "seen_at": .int(seenAt),
        ]
        if let periodStart { context["period_start"] = .int(periodStart) }
        if let cancelledAt { context["cancelled_at"] = .int(cancelledAt) }
        if let voidedAt { context["voided_at"] = .int(voidedAt) }
        switch resource {
        case .subscription(let s):
            return .object(strings: ["google_play": .object(strings: context), "subscriptionPurchaseV2": s.raw])
        case .product(let p):
            return .object(strings: ["google_play": .object(strings: context), "productPurchaseV2": p.raw])
        }
    }

    /// Reads an envelope back; nil when the JSON is not one (an App Store row's).
    package init?(json: JSONValue) {
        guard let context = json["google_play"], let packageName = context["package_name"]?.string,
            let token = context["token"]?.string, let chain = context["chain"]?.string,
            let seenAt = context["seen_at"]?.int64
        else { return nil }
        let resource: Resource
        if let s = json["subscriptionPurchaseV2"], let read = try? SubscriptionPurchase(s) {
            resource = .subscription(read)
        } else if let p = json["productPurchaseV2"], let read = try? ProductPurchase(p) {
            resource = .product(read)
        } else {
            return nil
        }
        self.init(
            packageName: packageName, tokenReference: token, chain: chain, seenAt: seenAt,
            periodStart: context["period_start"]?.int64, cancelledAt: context["cancelled_at"]?.int64,
            voidedAt: context["voided_at"]?.int64, resource: resource)
    }
}
