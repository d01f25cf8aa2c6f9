import Entitlements
package import JSON

/// RevenueCat's CustomerInfo (what its SDKs decode from `GET /v1/subscribers/{id}`, `POST
/// /v1/subscribers/identify` and `POST /v1/receipts`), written from receiptd's subscriber document:
/// one person, one set of facts, whichever API asks. Docs/revenuecat-sdk.md says field by field
/// where each comes from; ../shared/reference/revenuecat-sdk-protocol.md §5 says what each SDK
/// requires (Android's strict parse above all: `subscriptions`, `non_subscriptions`, and `store`,
/// `is_sandbox` and a non-null `original_purchase_date` on every product an entitlement names).
///
/// The caller holds the app's public key, which anyone can copy: no store identifier (transaction,
/// original transaction, order, token, app transaction) is written. A one-time purchase's `id`,
/// which Android requires, is made of what the answer shows anyway (``opaqueID(_:)``).
package enum CustomerInfo {
    /// Where a customer manages App Store subscriptions (Apple, "Offering subscriptions": the
    /// subscriptions page of the account) and Google Play ones (Google, "Let users manage their
    /// subscriptions": the Play Store's subscriptions center).
    static let appStoreManagement = "https://apps.apple.com/account/subscriptions"
    static let playStoreManagement = "https://play.google.com/store/account/subscriptions"

    /// The CustomerInfo of `appUserID` at `now` (epoch ms): from `document`, receiptd's subscriber
    /// document (its content: `entitlements`, `subscriptions`, `non_subscriptions`), or empty for
    /// a person nothing is known of yet (the SDKs' "unknown users exist"). `firstSeen`: when
    /// receiptd first heard of them (`now` for nobody yet).
    package static func json(appUserID: String, document: JSONValue?, firstSeen: Int64, now: Int64) -> JSONValue {
        let subscriber = subscriber(appUserID: appUserID, document: document, firstSeen: firstSeen, now: now)
        return .object([
            "request_date": .string(CivilTime.rfc3339(now)), "request_date_ms": .int(now), "subscriber": subscriber.json,
        ])
    }

    /// The whole answer around a ``subscriber(appUserID:document:firstSeen:now:)`` written once:
    /// byte for byte what ``json(appUserID:document:firstSeen:now:)`` gives at `now`.
    package static func body(subscriber: [UInt8], now: Int64) -> [UInt8] {
        var body: [UInt8] = []
        body.reserveCapacity(subscriber.count + 80)
        body += #"{"request_date":""#.utf8
        body += CivilTime.rfc3339(now).utf8
        body += #"","request_date_ms":"#.utf8
        body += String(now).utf8
        body += #","subscriber":"#.utf8
        body += subscriber
        body.append(UInt8(ascii: "}"))
        return body
    }

    /// The `subscriber` member, and whether it depends on `now` beyond the document's own times
    /// (an entitlement ended early with no time stated ends `now`): then it is no answer to keep.
    package static func subscriber(appUserID: String, document: JSONValue?, firstSeen: Int64, now: Int64) -> (
        json: JSONValue, dependsOnNow: Bool
    ) {
        let nowText = CivilTime.rfc3339(now)
        var dependsOnNow = false
        var subscriptions: [Identifier: JSONValue] = [:]
        var nonSubscriptions: [Identifier: JSONValue] = [:]
        var management: String?
        var latest = ""  // the latest subscription purchase, whose store's page is the management URL
        if case .object(let products)? = document?["subscriptions"] {
            for (product, s) in products {
                subscriptions[product] = subscription(s)
                let bought = s["purchased_at"]?.string ?? ""
                if bought >= latest {
                    latest = bought
                    management = s["store"]?.string == "play_store" ? playStoreManagement : appStoreManagement
                }
            }
        }
        if case .object(let products)? = document?["non_subscriptions"] {
            for (product, list) in products {
                guard case .array(let purchases) = list else { continue }
                // receiptd lists the newest first; the SDKs read the last element as the latest.
                var seen: [String: Int] = [:]
                nonSubscriptions[product] = .array(
                    purchases.reversed().map { p in
                        // The product, the purchase time, and how many of that product bought at that instant before.
                        let at = p["purchased_at"]?.string ?? ""
                        let key = product.string + "\u{0}" + at
                        defer { seen[key, default: 0] += 1 }
                        return nonSubscription(p, id: opaqueID(key + "\u{0}" + String(seen[key, default: 0])))
                    })
            }
        }
        var entitlements: [Identifier: JSONValue] = [:]
        if case .object(let granted)? = document?["entitlements"] {
            for (name, grant) in granted {
                entitlements[name] = entitlement(
                    name, grant, subscriptions: &subscriptions, nonSubscriptions: nonSubscriptions, now: nowText,
                    dependsOnNow: &dependsOnNow)
            }
        }
        let subscriber = JSONValue.object([
            "original_app_user_id": .string(appUserID), "first_seen": .string(CivilTime.rfc3339(firstSeen)),
            "original_application_version": .null, "original_purchase_date": .null,
            "management_url": management.map(JSONValue.string) ?? .null, "entitlements": .object(entitlements),
            "subscriptions": .object(subscriptions), "non_subscriptions": .object(nonSubscriptions),
            "other_purchases": .object([:]),
        ])
        return (subscriber, dependsOnNow)
    }

    /// A subscription (one per product, as receiptd's document keeps them).
    private static func subscription(_ s: JSONValue) -> JSONValue {
        var fields: [Identifier: JSONValue] = [
            "purchase_date": s["purchased_at"] ?? .null,
            // Never null: Android requires it on a product an entitlement names.
            "original_purchase_date": s["original_purchased_at"].flatMap { $0 == .null ? nil : $0 }
                ?? s["purchased_at"] ?? .null,
            "expires_date": s["expires_at"] ?? .null, "store": s["store"] ?? .string("app_store"),
            "is_sandbox": .bool(s["environment"]?.string == "sandbox"),
            "period_type": .string(periodType(s["period_type"]?.string)),
            "ownership_type": .string(s["ownership"]?.string == "family_shared" ? "FAMILY_SHARED" : "PURCHASED"),
            "unsubscribe_detected_at": s["unsubscribe_detected_at"] ?? .null,
            "billing_issues_detected_at": s["billing_issue_detected_at"] ?? .null,
            "grace_period_expires_date": s["grace_period_expires_at"] ?? .null,
            "refunded_at": s["refunded_at"] ?? .null, "auto_resume_date": s["resumes_at"] ?? .null,
        ]
        if let price = price(s["price"]) { fields["price"] = price }
        return .object(fields)
    }

    /// A one-time purchase: Android needs `id`, `purchase_date` and `store` on every one, iOS
    /// `purchase_date` and `is_sandbox`.
    private static func nonSubscription(_ p: JSONValue, id: String) -> JSONValue {
        var fields: [Identifier: JSONValue] = [
            "id": .string(id), "purchase_date": p["purchased_at"] ?? .null,
            "original_purchase_date": p["purchased_at"] ?? .null, "store": p["store"] ?? .string("app_store"),
            "is_sandbox": .bool(p["environment"]?.string == "sandbox"),
        ]
        if let price = price(p["price"]) { fields["price"] = price }
        return .object(fields)
    }

    /// An entitlement, pointing at a product the SDKs find in `subscriptions` or
    /// `non_subscriptions` (else they drop it): a grant with no product of its own (a promotion, an
    /// app bought before a paywall) gets one in `subscriptions`, named after the entitlement.
    ///
    /// The SDKs compute `isActive` as `expires_date` (null: for life) at or after the request
    /// date, so `expires_date` says what receiptd decided: an active grant runs to its grace
    /// period's end when it has one; one that ended early (refunded, revoked) ends when that
    /// happened, or now.
    private static func entitlement(
        _ name: Identifier, _ grant: JSONValue, subscriptions: inout [Identifier: JSONValue],
        nonSubscriptions: [Identifier: JSONValue], now: String, dependsOnNow: inout Bool
    ) -> JSONValue {
        let active = grant["active"] == .bool(true)
        var expires = grant["expires_at"]?.string
        if active, let grace = grant["grace_period_expires_at"]?.string, grace > (expires ?? "") { expires = grace }
        if !active, expires.map({ $0 >= now }) ?? true {
            expires = subscriptions[Identifier(grant["product_id"]?.string ?? "")]?["refunded_at"]?.string
            if expires == nil {
                expires = now
                dependsOnNow = true
            }
        }
        var product = grant["product_id"]?.string
        var purchased: JSONValue = .null
        if let id = product, let s = subscriptions[Identifier(id)] {
            purchased = s["purchase_date"] ?? .null
        } else if let id = product, case .array(let list)? = nonSubscriptions[Identifier(id)], let last = list.last {
            purchased = last["purchase_date"] ?? .null
        } else {
            // No product: a promotion (store "promotional") or a grandfathered app purchase.
            let promotional = grant["store"]?.string == "promotional"
            let id = (promotional ? "rc_promo_" : "receiptd_grandfathered_") + name.string
            product = id
            // receiptd's document states no purchase time for a grant with no product of its own.
            purchased = .string(now)
            dependsOnNow = true
            subscriptions[Identifier(id)] = .object([
                "purchase_date": purchased, "original_purchase_date": purchased,
                "expires_date": expires.map(JSONValue.string) ?? .null,
                "store": .string(promotional ? "promotional" : "app_store"),
                "is_sandbox": .bool(grant["environment"]?.string == "sandbox"), "period_type": .string("normal"),
                "ownership_type": .string("PURCHASED"), "unsubscribe_detected_at": .null, "billing_issues_detected_at": .null,
                "grace_period_expires_date": .null, "refunded_at": .null, "auto_resume_date": .null,
            ])
        }
        return .object([
            "product_identifier": .string(product ?? ""), "purchase_date": purchased,
            "expires_date": expires.map(JSONValue.string) ?? .null,
            "grace_period_expires_date": grant["grace_period_expires_at"] ?? .null,
        ])
    }

    /// receiptd's `period_type` as the SDKs name it (`normal`, `intro`, `trial`, `prepaid`).
    private static func periodType(_ type: String?) -> String {
        switch type {
        case "trial", "intro", "prepaid": type!
        default: "normal"
        }
    }

    /// `{"amount": 9.99, "currency": "EUR"}` from receiptd's `{"amount": "9.990", "currency"}`:
    /// the amount a JSON number (iOS fails a whole CustomerInfo on a string), written from the
    /// exact decimal text, never computed in binary floating point. Nil without a price.
    static func price(_ price: JSONValue?) -> JSONValue? {
        guard let amount = price?["amount"]?.string, let currency = price?["currency"]?.string,
            let number = decimalNumber(amount)
        else { return nil }
        return .object(["amount": number, "currency": .string(currency)])
    }

    /// Decimal text (`9.990`) as a JSON number of the same value (`9.99`); nil if not a decimal.
    static func decimalNumber(_ text: String) -> JSONValue? {
        var digits = Substring(text)
        guard !digits.isEmpty, digits.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || $0 == UInt8(ascii: ".") }),
            digits.utf8.filter({ $0 == UInt8(ascii: ".") }).count <= 1, digits.first != "."
        else { return nil }
        if digits.contains(".") {
            while digits.last == "0" { digits = digits.dropLast() }
            if digits.last == "." { digits = digits.dropLast() }
        }
        let literal = String(digits)
        guard let value = Double(literal) else { return nil }
        return .number(value, text: literal)
    }

    /// An id for a one-time purchase that names no store identifier: `rcd_` and FNV-1a 64 in hex of
    /// `key` (the product, the purchase time and a count: what the answer shows anyway, so the id
    /// tells nobody more). Stable between answers, and nothing anyone could post as a purchase.
    package static func opaqueID(_ key: String) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for b in key.utf8 { hash = (hash ^ UInt64(b)) &* 0x0000_0100_0000_01b3 }
        let hex = String(hash, radix: 16)
        return "rcd_" + String(repeating: "0", count: 16 - hex.count) + hex
    }
}
