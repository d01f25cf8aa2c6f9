import Entitlements
import FoundationEssentials
import JSON

/// A real-time developer notification as Cloud Pub/Sub pushes it
/// (https://developer.android.com/google/play/billing/rtdn-reference): the push's envelope
/// (`message.messageId`, `message.data` in base64) around Google Play's `DeveloperNotification`.
/// A notification says only that something changed: receiptd asks Google for the purchase again.
package struct PlayPush: Sendable, Equatable {
    /// Pub/Sub's id of the message: the same message pushed again has the same id.
    package var messageID: String
    /// `projects/…/subscriptions/…`, when the push names it.
    package var subscription: String?
    package var notification: DeveloperNotification

    /// Reads a push body; throws ``GooglePlayError/unexpectedAnswer(_:)`` naming what is wrong.
    package init(body: [UInt8]) throws(GooglePlayError) {
        guard let envelope = try? JSONValue.parse(body), case .object = envelope, let message = envelope["message"] else {
            throw .unexpectedAnswer("the push is not a Pub/Sub push message ({\"message\": …})")
        }
        guard let id = message["messageId"]?.string ?? message["message_id"]?.string, !id.isEmpty, id.utf8.count <= 128 else {
            throw .unexpectedAnswer("the push message has no messageId")
        }
        guard let data = message["data"]?.string, let bytes = Self.base64(data) else {
            throw .unexpectedAnswer("the push message's data is not base64")
        }
        messageID = id
        subscription = envelope["subscription"]?.string
        notification = try DeveloperNotification(json: bytes)
    }

    /// Standard or URL-safe base64, padded or not.
    static func base64(_ text: String) -> [UInt8]? {
        var normalized = String(text.map { $0 == "-" ? "+" : $0 == "_" ? "/" : $0 })
        while normalized.utf8.count % 4 != 0 { normalized += "=" }
        return Data(base64Encoded: normalized).map(Array.init)
    }
}

/// Google Play's `DeveloperNotification`: which app, when, and what kind of change to which token.
package struct DeveloperNotification: Sendable, Equatable {
    package enum Kind: Sendable, Equatable {
        /// `subscriptionNotification`: `notificationType` (1 RECOVERED … 20 PENDING_PURCHASE_CANCELED).
        case subscription(type: Int64, purchaseToken: String)
        /// `oneTimeProductNotification`: 1 PURCHASED, 2 CANCELED.
        case oneTimeProduct(type: Int64, purchaseToken: String, productID: String?)
        /// `voidedPurchaseNotification`: a refund, chargeback or revocation of one order.
        case voidedPurchase(purchaseToken: String, orderID: String?, productType: Int64?, refundType: Int64?)
        /// `testNotification`, sent from Play Console.
        case test
        /// A kind receiptd does not know yet (Google adds them: `pendingRefundReviewNotification`…),
        /// by its member's name: recorded and acknowledged, so Pub/Sub does not push it forever.
        case other(String)
    }

    package var packageName: String
    /// `eventTimeMillis`.
    package var eventTime: Int64
    package var kind: Kind

    package init(packageName: String, eventTime: Int64, kind: Kind) {
        self.packageName = packageName
        self.eventTime = eventTime
        self.kind = kind
    }

    package init(json bytes: [UInt8]) throws(GooglePlayError) {
        guard let value = try? JSONValue.parse(bytes), case .object = value else {
            throw .unexpectedAnswer("the notification is not a JSON object")
        }
        guard let package = value["packageName"]?.string else { throw .unexpectedAnswer("the notification has no packageName") }
        guard let time = value["eventTimeMillis"]?.int64 else {
            throw .unexpectedAnswer("the notification has no eventTimeMillis")
        }
        func token(_ object: JSONValue) throws(GooglePlayError) -> String {
            guard let token = object["purchaseToken"]?.string else {
                throw .unexpectedAnswer("the notification has no purchaseToken")
            }
            return token
        }
        if let s = value["subscriptionNotification"], s != .null {
            guard let type = s["notificationType"]?.int64 else {
                throw .unexpectedAnswer("the notification has no notificationType")
            }
            kind = .subscription(type: type, purchaseToken: try token(s))
        } else if let p = value["oneTimeProductNotification"], p != .null {
            guard let type = p["notificationType"]?.int64 else {
                throw .unexpectedAnswer("the notification has no notificationType")
            }
            kind = .oneTimeProduct(type: type, purchaseToken: try token(p), productID: p["sku"]?.string)
        } else if let v = value["voidedPurchaseNotification"], v != .null {
            kind = .voidedPurchase(
                purchaseToken: try token(v), orderID: v["orderId"]?.string, productType: v["productType"]?.int64,
                refundType: v["refundType"]?.int64)
        } else if let t = value["testNotification"], t != .null {
            kind = .test
        } else if case .object(let members) = value,
            let name = members.keys.map(\.string).sorted().first(where: { $0.hasSuffix("Notification") && $0.utf8.count <= 64 })
        {
            kind = .other(name)
        } else {
            throw .unexpectedAnswer("the notification names no subscription, one-time product, voided purchase or test")
        }
        packageName = package
        eventTime = time
    }

    /// The token it is about; nil for a test.
    package var purchaseToken: String? {
        switch kind {
        case .subscription(_, let t), .oneTimeProduct(_, let t, _), .voidedPurchase(let t, _, _, _): t
        case .test, .other: nil
        }
    }

    /// A short name for logs, storage and metrics: `SUBSCRIPTION_RENEWED`, `ONE_TIME_PRODUCT_CANCELED`,
    /// `VOIDED_PURCHASE`, `TEST`, or the number Google sent when it is one receiptd does not know.
    package var typeName: String {
        switch kind {
        case .subscription(let type, _): Self.subscriptionTypes[type].map { "SUBSCRIPTION_" + $0 } ?? "SUBSCRIPTION_\(type)"
        case .oneTimeProduct(let type, _, _):
            type == 1 ? "ONE_TIME_PRODUCT_PURCHASED" : type == 2 ? "ONE_TIME_PRODUCT_CANCELED" : "ONE_TIME_PRODUCT_\(type)"
        case .voidedPurchase: "VOIDED_PURCHASE"
        case .test: "TEST"
        case .other(let name): "OTHER_" + String(name.prefix(64))
        }
    }

    /// Whether it is about a subscription (else a one-time product), when it says.
    package var isSubscription: Bool? {
        switch kind {
        case .subscription: true
        case .oneTimeProduct: false
        case .voidedPurchase(_, _, let productType, _): productType.map { $0 == 1 }
        case .test, .other: nil
        }
    }

    static let subscriptionTypes: [Int64: String] = [
        1: "RECOVERED", 2: "RENEWED", 3: "CANCELED", 4: "PURCHASED", 5: "ON_HOLD", 6: "IN_GRACE_PERIOD", 7: "RESTARTED",
        8: "PRICE_CHANGE_CONFIRMED", 9: "DEFERRED", 10: "PAUSED", 11: "PAUSE_SCHEDULE_CHANGED", 12: "REVOKED",
        13: "EXPIRED", 17: "ITEMS_CHANGED", 18: "CANCELLATION_SCHEDULED", 19: "PRICE_CHANGE_UPDATED",
        20: "PENDING_PURCHASE_CANCELED", 22: "PRICE_STEP_UP_CONSENT_UPDATED",
    ]
}
