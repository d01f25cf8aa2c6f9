import HTTPServer
package import JSON
package import Operations
import ReceiptCore
import Webhooks

/// A person: their document (from the cache on the event loop when current), aliases, erasure, export, events, and asking the stores again now.
struct SubscriberRoutes: RouteGroup {
    let readSubscriber: ReadSubscriber
    let eraseSubscriber: EraseSubscriber
    let addAlias: AddAlias
    let exportSubscriber: ExportSubscriber
    let refresher: Refresher
    let attributes: CustomerAttributes

    func add(to api: inout API) {
        // A backend reads a subscriber, without calling Apple: from the document cache on the
        // event loop when it is current, else from storage.
        api.on(
            .get, "/v1/subscribers/{app_user_id}", access: .secretKey,
            immediately: { [readSubscriber] request, context in
                let user = try Requests.appUserID(in: context)
                guard try !Requests.explain(request), let (entry, now) = readSubscriber.cached(user) else { return nil }
                return Responses.cached(entry, now: now, request: request)
            },
            handler: { [readSubscriber] request, context in
                let user = try Requests.appUserID(in: context)
                let explain = try Requests.explain(request)
                // Else from their row, when the document kept there is still true: one row read.
                if !explain, let kept = try await readSubscriber.kept(user) { return Responses.kept(kept, request: request) }
                return Responses.document(try await readSubscriber.document(user), explain: explain, request: request)
            })
        // Erasure on a person's request (GDPR art. 17): every row under the id, the bytes scrubbed.
        api.on(.delete, "/v1/subscribers/{app_user_id}", access: .secretKey) { [eraseSubscriber] request, context in
            let user = try Requests.appUserID(in: context)
            return Responses.erased(user, try await eraseSubscriber(user, by: APIAuth.fingerprint(request)))
        }
        // The app learnt who an anonymous user is, or two accounts are one person: one subscriber.
        api.on(.post, "/v1/subscribers/{app_user_id}/aliases", access: .secretKey) { [addAlias] request, context in
            let user = try Requests.appUserID(in: context)
            return Responses.aliased(try await addAlias(user, alias: try Requests.alias(request.body)))
        }
        // Everything stored about a person (GDPR art. 15), streamed a page of rows at a time.
        api.on(.get, "/v1/subscribers/{app_user_id}/export", access: .secretKey) { [exportSubscriber] _, context in
            Responses.export(try await exportSubscriber(try Requests.appUserID(in: context)))
        }
        // Support reads what the app said of its user through RevenueCat's SDKs ($email, …).
        api.on(.get, "/v1/subscribers/{app_user_id}/attributes", access: .secretKey) { [attributes] _, context in
            let user = try Requests.appUserID(in: context)
            return Responses.attributes(try await attributes.read(user), of: user)
        }
        // A backend reads a subscriber's lifecycle events, newest first.
        api.on(.get, "/v1/subscribers/{app_user_id}/events", access: .secretKey) { [readSubscriber] request, context in
            let user = try Requests.appUserID(in: context)
            let (limit, cursor) = (try Requests.limit(request), try Requests.eventCursor(request))
            return Responses.events(try await readSubscriber.events(user, limit: limit, before: cursor), of: user)
        }
        // Support: ask Apple again now about every purchase of a subscriber.
        api.on(.post, "/v1/subscribers/{app_user_id}/refresh", access: .secretKey) { [refresher, readSubscriber] _, context in
            let user = try Requests.appUserID(in: context)
            let outcomes = try await refresher.refreshNow(user)
            return Responses.refreshed(outcomes, try await readSubscriber.document(user))
        }
    }
}

extension Requests {
    /// Events' `?cursor=<at>.<id>` from `next_cursor`.
    static func eventCursor(_ request: HTTPRequest) throws(ReceiptError) -> ReadSubscriber.EventCursor? {
        guard let text = request.queryValue("cursor") else { return nil }
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2, let at = Int64(parts[0]), let id = Int64(parts[1]) else {
            throw .invalidRequest("`cursor` must be a `next_cursor` from an earlier page.")
        }
        return .init(at: at, id: id)
    }

    /// The body of POST /v1/subscribers/{id}/aliases: `{"alias"}`, another app user id.
    static func alias(_ body: [UInt8]) throws(ReceiptError) -> String {
        guard let json = try? JSONValue.parse(body), case .object = json else {
            throw .invalidRequest("The body must be a JSON object.")
        }
        guard case .string(let alias)? = json["alias"] else { throw .invalidRequest("`alias` is required: an app user id.") }
        return try FieldRules.appUserID(alias, field: "alias")
    }
}

extension Responses {
    /// A cached document (never explained), byte for byte what ``document(_:explain:request:)`` gives.
    static func cached(_ entry: SubscriberCache.Entry, now: Int64, request: HTTPRequest) -> HTTPResponse {
        let tag = entityTag(version: entry.version, explain: false)
        if let unchanged = notModified(tag, request) { return unchanged }
        return HTTPResponse(
            status: .ok, headers: ["Content-Type": "application/json", "ETag": tag], body: entry.body(now: now))
    }

    /// A document as its row kept it (never explained), byte for byte what ``document(_:explain:request:)`` gives.
    static func kept(_ kept: ReadSubscriber.Rendered, request: HTTPRequest) -> HTTPResponse {
        let tag = entityTag(version: kept.version, explain: false)
        if let unchanged = notModified(tag, request) { return unchanged }
        return HTTPResponse(status: .ok, headers: ["Content-Type": "application/json", "ETag": tag], body: kept.body)
    }

    /// GET /v1/subscribers/{id}/events.
    static func events(_ page: ReadSubscriber.EventPage, of appUserID: String) -> HTTPResponse {
        .json(
            .object([
                "app_user_id": .string(appUserID), "events": .array(page.events.map(\.json)),
                "next_cursor": page.next.map { .string("\($0.at).\($0.id)") } ?? .null,
            ]))
    }

    /// GET /v1/subscribers/{id}/attributes: by name, with when the device set each (RFC 3339).
    static func attributes(_ attributes: [CustomerAttributes.Attribute], of appUserID: String) -> HTTPResponse {
        .json(
            .object([
                "app_user_id": .string(appUserID),
                "attributes": .array(
                    attributes.map {
                        .object([
                            "name": .string($0.name), "value": $0.value.map(JSONValue.string) ?? .null,
                            "updated_at": SubscriberDocument.time($0.updatedAt),
                        ])
                    }),
            ]))
    }

    /// POST /v1/subscribers/{id}/extend.
    /// DELETE /v1/subscribers/{id}: that it happened and how many rows it took, per table.
    static func erased(_ appUserID: String, _ outcome: EraseSubscriber.Erased) -> HTTPResponse {
        .json(outcome.json(appUserID))
    }

    /// The answer to POST /v1/subscribers/{id}/aliases: whether the ids were merged now (false: they
    /// already were one), the purchases that moved, and the subscriber's document.
    static func aliased(_ outcome: AddAlias.Outcome) -> HTTPResponse {
        .json(
            .object([
                "merged": .bool(outcome.merged), "moved": .array(outcome.moved.map(JSONValue.string)),
                "subscriber": outcome.snapshot.document.rendered(
                    version: outcome.snapshot.version, now: outcome.snapshot.now, explain: false),
            ]))
    }

    /// POST /v1/subscribers/{id}/refresh: what Apple said about each purchase, and the document after.
    static func refreshed(_ outcomes: [(original: String, outcome: String)], _ snapshot: SubscriberSnapshot) -> HTTPResponse {
        .json(
            .object([
                "purchases": .array(
                    outcomes.map { .object(["original_transaction_id": .string($0.original), "outcome": .string($0.outcome)]) }),
                "subscriber": snapshot.document.rendered(version: snapshot.version, now: snapshot.now, explain: true),
            ]))
    }
}

extension EraseSubscriber.Erased {
    /// The answer to an erasure (the API's and `receiptd erase`'s): that it happened, how many
    /// rows it took, per table.
    package func json(_ appUserID: String) -> JSONValue {
        .object([
            "app_user_id": .string(appUserID), "erased": .bool(true), "rows": .int(Int64(total)),
            "tables": .object(strings: rows.mapValues { .int(Int64($0)) }),
        ])
    }
}
