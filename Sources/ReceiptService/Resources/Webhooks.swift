import HTTPServer
import JSON
import Operations
import ReceiptCore
import Webhooks

/// Ops on webhook deliveries: the list, a retry now, a replay to an endpoint.
struct WebhookRoutes: RouteGroup {
    let webhooks: WebhookOperations

    func add(to api: inout API) {
        // Ops: webhook deliveries, newest first, by status, endpoint and subscriber.
        api.on(.get, "/v1/admin/webhooks/deliveries", access: .secretKey) { [webhooks] request, _ in
            let (limit, before) = (try Requests.limit(request), try Requests.idCursor(request))
            let (status, endpoint, user) = try Requests.deliveryFilters(request)
            return Responses.deliveries(
                try await webhooks.deliveries(status: status, endpoint: endpoint, appUserID: user, limit: limit, before: before))
        }
        // Ops: send one delivery again now (a failed one, or one waiting for its retry).
        api.on(.post, "/v1/admin/webhooks/deliveries/{id}/retry", access: .secretKey) { [webhooks] _, context in
            .json(Responses.delivery(try await webhooks.retry(try Requests.deliveryID(in: context))), status: .accepted)
        }
        // Ops: send an endpoint every stored event again from a time (a consumer that lost its data).
        api.on(.post, "/v1/admin/webhooks/{endpoint}/replay", access: .secretKey) { [webhooks] request, context in
            let endpoint = try Requests.endpointName(in: context)
            let since = try Requests.replaySince(request.body)
            return Responses.replayed(endpoint: endpoint, queued: try await webhooks.replay(endpoint, since: since))
        }
    }
}

extension Requests {
    /// GET /v1/admin/webhooks/deliveries' filters: `?status=` (pending, delivered, failed),
    /// `?endpoint=`, `?app_user_id=`.
    static func deliveryFilters(_ request: HTTPRequest) throws(ReceiptError)
        -> (status: WebhookOperations.Delivery.Status?, endpoint: String?, appUserID: String?)
    {
        var status: WebhookOperations.Delivery.Status?
        if let text = request.queryValue("status") {
            guard let s = WebhookOperations.Delivery.Status(rawValue: text) else {
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
}

extension Responses {
    /// GET /v1/admin/webhooks/deliveries.
    static func deliveries(_ page: Listings.Page<WebhookOperations.Delivery, Int64>) -> HTTPResponse {
        .json(
            .object([
                "deliveries": .array(page.rows.map(delivery)), "next_cursor": page.next.map { .string(String($0)) } ?? .null,
            ]))
    }

    static func delivery(_ d: WebhookOperations.Delivery) -> JSONValue {
        .object([
            "id": .string(String(d.id)), "webhook_id": .string(d.messageID), "endpoint": .string(d.endpoint),
            "app_user_id": .string(d.appUserID), "type": .string(d.type), "version": .int(d.version),
            "status": .string(d.status.rawValue), "in_flight": .bool(d.claimed && d.status == .pending),
            "attempts": .int(d.attempts), "next_attempt_at": d.status == .pending ? SubscriberDocument.time(d.dueAt) : .null,
            "last_attempt_at": SubscriberDocument.time(d.lastAttemptAt), "last_status": d.lastStatus.map { .int($0) } ?? .null,
            "last_error": d.lastError.map(JSONValue.string) ?? .null, "created_at": SubscriberDocument.time(d.createdAt),
            "finished_at": SubscriberDocument.time(d.finishedAt),
        ])
    }

    /// POST /v1/admin/webhooks/{endpoint}/replay's 202.
    static func replayed(endpoint: String, queued: Int) -> HTTPResponse {
        .json(.object(["endpoint": .string(endpoint), "queued": .int(queued)]), status: .accepted)
    }
}
