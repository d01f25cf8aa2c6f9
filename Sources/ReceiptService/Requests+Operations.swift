import AppStore
import Entitlements
import FoundationEssentials
import HTTPServer
import JSON
import ReceiptCore
import Storage
import StoreCalls
import Webhooks

/// The operators' requests: support (extensions, mass extensions, lookups), aliases, test
/// notifications, webhooks, notification listings, statistics and promotions.
extension Requests {
    /// The body of POST /v1/admin/mass-extensions: `{"product_id", "days", "reason", "request_id",
    /// "storefronts"?, "bundle_id"?, "environment"?}`. `request_id` (a UUID) is required: sent
    /// again, the same request is answered, never a second extension of everyone.
    static func massExtension(_ body: [UInt8]) throws(ReceiptError) -> MassExtensions.Request {
        guard let json = try? JSONValue.parse(body), case .object = json else {
            throw .invalidRequest("The body must be a JSON object.")
        }
        guard case .string(let product)? = json["product_id"] else { throw .invalidRequest("`product_id` is required.") }
        guard case .number(let n, _)? = json["days"], n == n.rounded(), (1...90).contains(n) else {
            throw .invalidRequest("`days` is required: an integer from 1 to 90.")
        }
        let reasons = AppStoreSupport.ExtendReason.allCases.map(\.rawValue)
        guard case .string(let name)? = json["reason"], let reason = AppStoreSupport.ExtendReason(rawValue: name) else {
            throw .invalidRequest("`reason` is required: one of \(reasons.joined(separator: ", ")).")
        }
        guard case .string(let requestID)? = json["request_id"], UUID(uuidString: requestID) != nil else {
            throw .invalidRequest("`request_id` is required: a UUID, the same when the request is sent again.")
        }
        var storefronts: [String] = []
        switch json["storefronts"] {
        case nil, .null?: break
        case .array(let items)?:
            storefronts = items.compactMap(\.string)
            guard storefronts.count == items.count else { throw .invalidRequest("`storefronts` must be an array of strings.") }
        default: throw .invalidRequest("`storefronts` must be an array of strings.")
        }
        var bundleID: String?
        switch json["bundle_id"] {
        case nil, .null?: break
        case .string(let id)?: bundleID = id
        default: throw .invalidRequest("`bundle_id` must be a string.")
        }
        var environment: AppStoreEnvironment?
        switch json["environment"] {
        case nil, .null?: break
        case .string(let name)?:
            guard let named = AppStoreEnvironment(rawValue: name) else {
                throw .invalidRequest("`environment` must be production or sandbox.")
            }
            environment = named
        default: throw .invalidRequest("`environment` must be production or sandbox.")
        }
        return MassExtensions.Request(
            bundleID: bundleID, environment: environment, productID: product, storefronts: storefronts, days: Int(n),
            reason: reason, requestID: requestID)
    }

    /// Mass extensions' `?cursor=<requested_at>.<request_id>` from `next_cursor`.
    static func massExtensionCursor(_ request: HTTPRequest) throws(ReceiptError) -> (requestedAt: Int64, requestID: String)? {
        guard let text = request.queryValue("cursor") else { return nil }
        guard let dot = text.firstIndex(of: "."), let at = Int64(text[..<dot]),
            UUID(uuidString: String(text[text.index(after: dot)...])) != nil
        else { throw .invalidRequest("`cursor` must be a `next_cursor` from an earlier page.") }
        return (at, String(text[text.index(after: dot)...]).lowercased())
    }

    /// The `{request_id}` in the path: a mass extension's.
    static func requestID(in context: RouteContext) throws(ReceiptError) -> String {
        context.parameters["request_id"] ?? ""
    }

    /// The body of POST /v1/subscribers/{id}/extend: `{"days", "reason", "original_transaction_id"?,
    /// "request_id"?}`. `request_id` (a UUID) makes a retried call the same request at Apple; one is
    /// made when absent.
    static func extensionRequest(_ body: [UInt8], appUserID: String) throws(ReceiptError) -> AppStoreSupport.Extension {
        guard let json = try? JSONValue.parse(body), case .object = json else {
            throw .invalidRequest("The body must be a JSON object.")
        }
        guard case .number(let n, _)? = json["days"], n == n.rounded(), (1...90).contains(n) else {
            throw .invalidRequest("`days` is required: an integer from 1 to 90.")
        }
        let reasons = AppStoreSupport.ExtendReason.allCases.map(\.rawValue)
        guard case .string(let name)? = json["reason"], let reason = AppStoreSupport.ExtendReason(rawValue: name) else {
            throw .invalidRequest("`reason` is required: one of \(reasons.joined(separator: ", ")).")
        }
        var original: String?
        switch json["original_transaction_id"] {
        case nil, .null?: break
        case .string(let id)?:
            try FieldRules.transactionID(id, field: "original_transaction_id")
            original = id
        default: throw .invalidRequest("`original_transaction_id` must be a string.")
        }
        var requestID = UUID().uuidString.lowercased()
        switch json["request_id"] {
        case nil, .null?: break
        case .string(let id)? where UUID(uuidString: id) != nil: requestID = id.lowercased()
        default: throw .invalidRequest("`request_id` must be a UUID.")
        }
        return AppStoreSupport.Extension(
            appUserID: appUserID, days: Int(n), reason: reason, originalTransactionID: original, requestID: requestID)
    }

    /// The body of POST /v1/subscribers/{id}/aliases: `{"alias"}`, another app user id.
    static func alias(_ body: [UInt8]) throws(ReceiptError) -> String {
        guard let json = try? JSONValue.parse(body), case .object = json else {
            throw .invalidRequest("The body must be a JSON object.")
        }
        guard case .string(let alias)? = json["alias"] else { throw .invalidRequest("`alias` is required: an app user id.") }
        return try FieldRules.appUserID(alias, field: "alias")
    }

    /// The body of POST /v1/admin/test-notification: `{"bundle_id"?, "environment"?}`, or none.
    static func testNotification(_ body: [UInt8]) throws(ReceiptError) -> (bundleID: String?, environment: AppStoreEnvironment?) {
        guard !body.isEmpty else { return (nil, nil) }
        guard let json = try? JSONValue.parse(body), case .object = json else {
            throw .invalidRequest("The body must be a JSON object (or empty).")
        }
        var bundleID: String?
        switch json["bundle_id"] {
        case nil, .null?: break
        case .string(let b)?:
            try FieldRules.bundleID(b)
            bundleID = b
        default: throw .invalidRequest("`bundle_id` must be a string.")
        }
        var environment: AppStoreEnvironment?
        switch json["environment"] {
        case nil, .null?: break
        case .string(let e)? where AppStoreEnvironment(rawValue: e) != nil: environment = AppStoreEnvironment(rawValue: e)
        default: throw .invalidRequest("`environment` must be `production` or `sandbox`.")
        }
        return (bundleID, environment)
    }

    /// GET /v1/admin/webhooks/deliveries' filters: `?status=` (pending, delivered, failed),
    /// `?endpoint=`, `?app_user_id=`.
    static func deliveryFilters(_ request: HTTPRequest) throws(ReceiptError)
        -> (status: WebhookDelivery.Status?, endpoint: String?, appUserID: String?)
    {
        var status: WebhookDelivery.Status?
        if let text = request.queryValue("status") {
            guard let s = WebhookDelivery.Status(rawValue: text) else {
                throw .invalidRequest("`status` must be one of pending, delivered, failed.")
            }
            status = s
        }
        let endpoint = try request.queryValue("endpoint").map { name throws(ReceiptError) in
            guard WebhookEndpoint.isValidName(name) else { throw .invalidRequest("`endpoint` must be an endpoint's name.") }
            return name
        }
        let user = try request.queryValue("app_user_id").map { id throws(ReceiptError) in try FieldRules.appUserID(id) }
        return (status, endpoint, user)
    }

    /// The `{id}` of a webhook delivery in the path.
    static func deliveryID(in context: RouteContext) throws(ReceiptError) -> Int64 {
        guard let id = Int64(context.parameters["id"] ?? ""), id > 0 else {
            throw .invalidRequest("The delivery id in the path must be a positive integer.")
        }
        return id
    }

    /// The `{endpoint}` in the path.
    static func endpointName(in context: RouteContext) throws(ReceiptError) -> String {
        let name = context.parameters["endpoint"] ?? ""
        guard WebhookEndpoint.isValidName(name) else { throw .webhookEndpointNotFound }
        return name
    }

    /// The body of POST /v1/admin/webhooks/{endpoint}/replay: `{"since": "<RFC 3339 time or YYYY-MM-DD>"}`.
    static func replaySince(_ body: [UInt8]) throws(ReceiptError) -> Int64 {
        guard let json = try? JSONValue.parse(body), case .object = json else {
            throw .invalidRequest("The body must be a JSON object.")
        }
        guard case .string(let text)? = json["since"], let since = FieldRules.instant(text) else {
            throw .invalidRequest("`since` is required: an RFC 3339 time or a date (YYYY-MM-DD).")
        }
        return since
    }

    /// `?since=`: an RFC 3339 time or a date (YYYY-MM-DD); nil when absent.
    static func since(_ request: HTTPRequest) throws(ReceiptError) -> Int64? {
        guard let text = request.queryValue("since") else { return nil }
        guard let t = FieldRules.instant(text) else {
            throw .invalidRequest("`since` must be an RFC 3339 time or a date (YYYY-MM-DD).")
        }
        return t
    }

    /// GET /v1/notifications' filters: `?type=`, `?outcome=`, `?app_user_id=`.
    static func notificationFilter(_ request: HTTPRequest) throws(ReceiptError) -> NotificationFilter {
        func word(_ name: String) throws(ReceiptError) -> String? {
            guard let text = request.queryValue(name) else { return nil }
            let allowed = { (b: UInt8) in
                b == UInt8(ascii: "_") || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(b)
                    || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(b) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(b)
            }
            guard (1...64).contains(text.utf8.count), text.utf8.allSatisfy(allowed) else {
                throw .invalidRequest("`\(name)` must be 1 to 64 letters, digits or `_`.")
            }
            return text
        }
        return NotificationFilter(
            type: try word("type"), outcome: try word("outcome"),
            appUserID: try request.queryValue("app_user_id").map { id throws(ReceiptError) in try FieldRules.appUserID(id) })
    }

    /// GET /v1/admin/stats: `?from=` and `?to=` (RFC 3339 times or dates; the last 30 days to now
    /// when absent) and `?interval=` (`hour`, `day` or `week`; `day` when absent).
    static func statsRange(_ request: HTTPRequest) throws(ReceiptError) -> (
        from: Int64?, to: Int64?, interval: Statistics.Interval
    ) {
        func instant(_ name: String) throws(ReceiptError) -> Int64? {
            guard let text = request.queryValue(name) else { return nil }
            guard let t = FieldRules.instant(text) else {
                throw .invalidRequest("`\(name)` must be an RFC 3339 time or a date (YYYY-MM-DD).")
            }
            return t
        }
        let interval = try request.queryValue("interval").map { text throws(ReceiptError) in
            guard let i = Statistics.Interval(rawValue: text) else {
                throw .invalidRequest("`interval` must be hour, day or week.")
            }
            return i
        }
        return (try instant("from"), try instant("to"), interval ?? .day)
    }

    /// The `{name}` of an entitlement in the path.
    static func entitlementName(in context: RouteContext) throws(ReceiptError) -> String {
        let name = context.parameters["name"] ?? ""
        try PromoteSubscriber.check(entitlement: name)
        return name
    }

    /// The body of POST /v1/subscribers/{id}/entitlements/{name}/promotional: `{"duration": "P7D"}`
    /// (an ISO 8601 calendar duration) or `{"expires_at": "<RFC 3339>"}`, and `"reason"`.
    static func promotion(_ body: [UInt8]) throws(ReceiptError) -> (term: PromoteSubscriber.Term, reason: String) {
        guard let json = try? JSONValue.parse(body), case .object = json else {
            throw .invalidRequest("The body must be a JSON object.")
        }
        let term: PromoteSubscriber.Term
        switch (json["duration"] ?? .null, json["expires_at"] ?? .null) {
        case (.string(let text), .null):
            guard let d = CalendarDuration(iso8601: text) else {
                throw .invalidRequest("`duration` must be an ISO 8601 duration such as P7D, P1M or PT12H.")
            }
            term = .duration(d)
        case (.null, .string(let text)):
            guard let t = FieldRules.instant(text) else { throw .invalidRequest("`expires_at` must be an RFC 3339 time.") }
            term = .until(t)
        default: throw .invalidRequest("Send one of `duration` or `expires_at`.")
        }
        guard case .string(let reason)? = json["reason"] else {
            throw .invalidRequest("`reason` is required: 1 to 500 bytes saying why.")
        }
        return (term, reason)
    }

    /// The optional body of DELETE …/promotional: `{"reason"}`.
    static func revocationReason(_ body: [UInt8]) throws(ReceiptError) -> String? {
        guard !body.isEmpty else { return nil }
        guard let json = try? JSONValue.parse(body), case .object = json else {
            throw .invalidRequest("The body must be empty or a JSON object.")
        }
        switch json["reason"] ?? .null {
        case .null: return nil
        case .string(let reason): return reason
        default: throw .invalidRequest("`reason` must be a string.")
        }
    }

    /// The `{transaction_id}` path parameter: any transaction of a purchase, or its original.
    static func transactionID(in context: RouteContext) throws(ReceiptError) -> String {
        let id = context.parameters["transaction_id"] ?? ""
        try FieldRules.storedTransactionID(id)
        return id
    }

    /// The `{order_id}` path parameter.
    static func orderID(in context: RouteContext) throws(ReceiptError) -> String {
        let id = context.parameters["order_id"] ?? ""
        try FieldRules.orderID(id)
        return id
    }
}
