import AppStore
import Entitlements
import FoundationEssentials
import HTTPServer
import JSON
import ReceiptCore
import StoreCalls

/// Support acting for a customer at the stores: promotional entitlements, an order looked up, extensions one by one and for everyone, Apple's TEST notification.
struct SupportRoutes: RouteGroup {
    let support: AppStoreSupport
    let massExtensions: MassExtensions
    let promote: PromoteSubscriber

    func add(to api: inout API) {
        // Support gives an entitlement for a while (after an outage, a complaint), or takes it back.
        api.on(.post, "/v1/subscribers/{app_user_id}/entitlements/{name}/promotional", access: .secretKey) {
            [promote] request, context in
            let (user, name) = (try Requests.appUserID(in: context), try Requests.entitlementName(in: context))
            let (term, reason) = try Requests.promotion(request.body)
            let granted = try await promote.grant(name, to: user, for: term, reason: reason, by: APIAuth.fingerprint(request))
            return Responses.promoted(granted.snapshot, [granted.promotion], status: .created)
        }
        api.on(.delete, "/v1/subscribers/{app_user_id}/entitlements/{name}/promotional", access: .secretKey) {
            [promote] request, context in
            let (user, name) = (try Requests.appUserID(in: context), try Requests.entitlementName(in: context))
            let reason = try Requests.revocationReason(request.body)
            let revoked = try await promote.revoke(name, of: user, reason: reason, by: APIAuth.fingerprint(request))
            return Responses.promoted(revoked.snapshot, revoked.revoked, status: .ok)
        }
        // Support: a purchase by the order id on the customer's Apple invoice, and who holds it.
        api.on(.get, "/v1/admin/orders/{order_id}", access: .secretKey) { [support] _, context in
            let orderID = try Requests.orderID(in: context)
            return Responses.order(try await support.order(orderID))
        }
        // Support: extend a subscriber's subscription at Apple, then store its new expiry.
        api.on(.post, "/v1/subscribers/{app_user_id}/extend", access: .secretKey) { [support] request, context in
            let user = try Requests.appUserID(in: context)
            let extension_ = try Requests.extensionRequest(request.body, appUserID: user)
            return Responses.extended(try await support.extend(extension_))
        }
        // Support: extend every active subscription to a product at Apple (an outage's compensation).
        api.on(.post, "/v1/admin/mass-extensions", access: .secretKey) { [massExtensions] request, _ in
            let asked = try Requests.massExtension(request.body)
            let (record, created) = try await massExtensions.request(asked, by: APIAuth.fingerprint(request))
            return .json(Responses.massExtension(record), status: created ? .accepted : .ok)
        }
        api.on(.get, "/v1/admin/mass-extensions", access: .secretKey) { [massExtensions] request, _ in
            let limit = try Requests.limit(request)
            let before = try Requests.massExtensionCursor(request)
            let found = try await massExtensions.list(limit: limit + 1, before: before)
            return Responses.massExtensions(Array(found.prefix(limit)), more: found.count > limit)
        }
        api.on(.get, "/v1/admin/mass-extensions/{request_id}", access: .secretKey) { [massExtensions] _, context in
            .json(Responses.massExtension(try await massExtensions.find(try Requests.requestID(in: context))))
        }
        // Ops: ask Apple to send a TEST notification to the configured URL.
        api.on(.post, "/v1/admin/test-notification", access: .secretKey) { [support] request, _ in
            let (bundleID, environment) = try Requests.testNotification(request.body)
            let sent = try await support.testNotification(bundleID: bundleID, environment: environment)
            return Responses.testNotification(token: sent.token, environment: sent.environment)
        }
    }
}

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
        var environment: StoreEnvironment?
        switch json["environment"] {
        case nil, .null?: break
        case .string(let name)?:
            guard let named = StoreEnvironment(rawValue: name) else {
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

    /// The body of POST /v1/admin/test-notification: `{"bundle_id"?, "environment"?}`, or none.
    static func testNotification(_ body: [UInt8]) throws(ReceiptError) -> (bundleID: String?, environment: StoreEnvironment?) {
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
        var environment: StoreEnvironment?
        switch json["environment"] {
        case nil, .null?: break
        case .string(let e)? where StoreEnvironment(rawValue: e) != nil: environment = StoreEnvironment(rawValue: e)
        default: throw .invalidRequest("`environment` must be `production` or `sandbox`.")
        }
        return (bundleID, environment)
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

    /// The `{order_id}` path parameter.
    static func orderID(in context: RouteContext) throws(ReceiptError) -> String {
        let id = context.parameters["order_id"] ?? ""
        try FieldRules.orderID(id)
        return id
    }
}

extension Responses {
    /// GET /v1/admin/orders/{order_id}.
    static func order(_ order: AppStoreSupport.Order) -> HTTPResponse {
        let text = { (s: String?) in s.map(JSONValue.string) ?? .null }
        return .json(
            .object([
                "order_id": .string(order.orderID), "environment": .string(order.environment.rawValue),
                "transactions": .array(
                    order.transactions.map { t, holder in
                        .object([
                            "transaction_id": .string(t.transactionID),
                            "original_transaction_id": .string(t.originalTransactionID), "product_id": .string(t.productID),
                            "bundle_id": .string(t.bundleID), "type": text(t.type),
                            "purchased_at": SubscriberDocument.time(t.purchaseDate),
                            "expires_at": SubscriberDocument.time(t.expiresDate),
                            "revoked_at": SubscriberDocument.time(t.revocationDate), "app_user_id": text(holder),
                        ])
                    }),
            ]))
    }

    static func extended(_ e: AppStoreSupport.Extended) -> HTTPResponse {
        .json(
            .object([
                "extension": .object([
                    "original_transaction_id": .string(e.originalTransactionID),
                    "effective_date": SubscriberDocument.time(e.effectiveDate),
                ]),
                "subscriber": e.snapshot.document.rendered(version: e.snapshot.version, now: e.snapshot.now, explain: false),
            ]))
    }

    /// A mass extension as stored: what was asked, by whom, and how far it has come.
    static func massExtension(_ r: MassExtensions.Progress) -> JSONValue {
        let int = { (n: Int64?) in n.map(JSONValue.int) ?? .null }
        return .object([
            "request_id": .string(r.requestID), "bundle_id": .string(r.bundleID), "environment": .string(r.environment),
            "product_id": .string(r.productID), "storefronts": .array(r.storefronts.map(JSONValue.string)),
            "days": .int(Int64(r.days)), "reason": .string(r.reason), "requested_by": .string(r.requestedBy),
            "requested_at": SubscriberDocument.time(r.requestedAt), "status": .string(r.status.rawValue),
            "submitted_at": SubscriberDocument.time(r.submittedAt),
            "apple_completed_at": SubscriberDocument.time(r.appleCompletedAt), "succeeded_count": int(r.succeededCount),
            "failed_count": int(r.failedCount), "subscriptions_refreshed": .int(Int64(r.refreshed)),
            "finished_at": SubscriberDocument.time(r.finishedAt),
            "next_step_at": SubscriberDocument.time(r.dueAt), "attempts": .int(Int64(r.attempts)),
            "last_error": r.lastError.map(JSONValue.string) ?? .null,
        ])
    }

    /// GET /v1/admin/mass-extensions.
    static func massExtensions(_ rows: [MassExtensions.Progress], more: Bool) -> HTTPResponse {
        .json(
            .object([
                "mass_extensions": .array(rows.map(massExtension)),
                "next_cursor": more ? rows.last.map { .string("\($0.requestedAt).\($0.requestID)") } ?? .null : .null,
            ]))
    }

    /// POST /v1/admin/test-notification.
    static func testNotification(token: String, environment: StoreEnvironment) -> HTTPResponse {
        .json(
            .object(["test_notification_token": .string(token), "environment": .string(environment.rawValue)]),
            status: .accepted)
    }

    /// A promotion as granted or revoked.
    static func promotion(_ p: Promotion) -> JSONValue {
        let text = { (s: String?) in s.map(JSONValue.string) ?? .null }
        return .object([
            "id": .string(String(p.id)), "entitlement": .string(p.entitlement),
            "starts_at": SubscriberDocument.time(p.startsAt), "expires_at": SubscriberDocument.time(p.expiresAt),
            "granted_by": .string(p.grantedBy), "reason": .string(p.reason),
            "revoked_at": SubscriberDocument.time(p.revokedAt), "revoked_by": text(p.revokedBy),
            "revoke_reason": text(p.revokeReason),
        ])
    }

    /// The answer to POST and DELETE …/entitlements/{name}/promotional: the promotions it made or
    /// ended, and the subscriber's explained document.
    static func promoted(_ snapshot: SubscriberSnapshot, _ promotions: [Promotion], status: HTTPStatus) -> HTTPResponse {
        .json(
            .object([
                "promotions": .array(promotions.map(promotion)),
                "subscriber": snapshot.document.rendered(version: snapshot.version, now: snapshot.now, explain: true),
            ]), status: status)
    }
}
