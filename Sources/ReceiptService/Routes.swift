import AppStore
import HTTPServer
import JSON
import Storage

/// The HTTP surface of receiptd. Each route's handler is small and delegates to a service.
struct Routes: Sendable {
    let database: DatabaseQueue
    let migrator: Migrator
    let auth: APIAuth
    let receipts: ReceiptProcessor
    let notifications: NotificationProcessor
    let sharedReceipts: SharedReceipts
    /// For the circuit breaker's state in `/readyz`.
    let appStore: VerifyReceiptClient
    /// Per-key and per-address limits on POST /v1/receipts.
    let limiter: RateLimiter
    let telemetry: Telemetry
    let documentCache: SubscriberCache
    let metricsRequireKey: Bool
    /// `openapi.yaml`, served as is.
    let openAPI: [UInt8]?
    let now: @Sendable () -> Int64

    func router() -> Router {
        var router = Router()
        // Liveness: the process answers. Never touches the database.
        router.immediate(.get, "/healthz") { _, _ in
            .json(.object(["status": .string("ok")]))
        }
        // Readiness: the database answers and every known migration is applied.
        router.on(.get, "/readyz") { [appStore] _, _ in
            await Self.readiness(database: database, migrator: migrator, appStore: Self.appStoreStatus(appStore))
        }
        // Prometheus text: every family in README "Metrics" (a secret key unless `metrics.requireKey` is false).
        router.immediate(.get, "/metrics") { [auth, appStore, telemetry, documentCache, metricsRequireKey] request, context in
            if metricsRequireKey, let refused = auth.check(request, requires: .secret, requestID: context.requestID) {
                return refused
            }
            return HTTPResponse(
                status: .ok, headers: ["Content-Type": "text/plain; version=0.0.4; charset=utf-8"],
                body: telemetry.scrape(breaker: appStore.breaker?.state, cachedDocuments: documentCache.count))
        }
        // The API's contract (OpenAPI 3.1), for integrators and the CI's schemathesis run.
        router.immediate(.get, "/openapi.yaml") { [openAPI] _, context in
            guard let openAPI else {
                return ErrorBody.response(
                    status: .notFound, code: "not_found", message: "This receiptd has no OpenAPI document.",
                    requestID: context.requestID)
            }
            return HTTPResponse(status: .ok, headers: ["Content-Type": "application/yaml"], body: openAPI)
        }
        // A mobile app posts its receipt (public or secret key): verify, store, answer the document.
        router.on(.post, "/v1/receipts") { [auth, receipts, limiter, now] request, context in
            if let refused = auth.check(request, requires: .public, requestID: context.requestID) { return refused }
            let key = String(request.headers[first: "Authorization"]?.dropFirst(7) ?? "")
            if let wait = limiter.check(key: key, address: context.request.remoteAddress, now: now()) {
                return APIError.rateLimited(retryAfterSeconds: wait).response(requestID: context.requestID)
            }
            return await receipts.post(request, requestID: context.requestID)
        }
        // A backend reads a subscriber, without calling Apple (secret key): from the document cache
        // on the event loop when it is current, else from storage.
        router.on(
            .get, "/v1/subscribers/{app_user_id}",
            immediately: { [auth, receipts] request, context in
                switch Self.secretUser(request, context, auth: auth) {
                case .refused(let response): response
                case .user(let user): receipts.cachedSubscriber(user, request: request)  // nil: not cached
                }
            },
            handler: { [auth, receipts] request, context in
                switch Self.secretUser(request, context, auth: auth) {
                case .refused(let response): response
                case .user(let user): await receipts.subscriber(user, request: request, requestID: context.requestID)
                }
            })
        // A backend reads a subscriber's lifecycle events, newest first (secret key).
        router.on(.get, "/v1/subscribers/{app_user_id}/events") { [auth, receipts] request, context in
            switch Self.secretUser(request, context, auth: auth) {
            case .refused(let response): response
            case .user(let user): await receipts.events(user, request: request, requestID: context.requestID)
            }
        }
        // Apple's App Store Server Notifications, V1 or V2 (no API key: Apple cannot send one; V1
        // proves itself with the shared secret, V2 with Apple's signature).
        router.on(.post, "/v1/notifications/apple") { [notifications] request, context in
            await notifications.receive(request, requestID: context.requestID)
        }
        // The latest notifications with their outcome (secret key).
        router.on(.get, "/v1/notifications") { [auth, notifications] request, context in
            if let refused = auth.check(request, requires: .secret, requestID: context.requestID) { return refused }
            return await notifications.list(request, requestID: context.requestID)
        }
        // Purchases passed between app users, with their transfers (secret key).
        router.on(.get, "/v1/admin/shared-receipts") { [auth, sharedReceipts] request, context in
            if let refused = auth.check(request, requires: .secret, requestID: context.requestID) { return refused }
            return await sharedReceipts.list(request, requestID: context.requestID)
        }
        return router
    }

    /// A secret-key request for one subscriber: its `{app_user_id}`, or the answer refusing it
    /// (no or a public key, an id outside the rules).
    enum SubscriberAccess {
        case user(String)
        case refused(HTTPResponse)
    }

    static func secretUser(_ request: HTTPRequest, _ context: RouteContext, auth: APIAuth) -> SubscriberAccess {
        if let refused = auth.check(request, requires: .secret, requestID: context.requestID) { return .refused(refused) }
        do throws(APIError) {
            return .user(try appUserID(in: context))
        } catch {
            return .refused(error.response(requestID: context.requestID))
        }
    }

    /// The `{app_user_id}` path parameter, held to the same rules as in a body.
    static func appUserID(in context: RouteContext) throws(APIError) -> String {
        try FieldRules.appUserID(context.parameters["app_user_id"] ?? "", field: "app_user_id in the path")
    }

    /// The body of `/readyz`.
    struct Readiness: Sendable, Equatable {
        var status: String
        var database: String
        var migrationsApplied: Int
        var migrationsPending: Int
        /// The App Store circuit breaker: informative only (GETs are served whatever Apple does).
        var appStore: AppStoreStatus? = nil

        var json: JSONValue {
            var members: [Identifier: JSONValue] = [
                "status": .string(status), "database": .string(database),
                "migrations_applied": .int(migrationsApplied), "migrations_pending": .int(migrationsPending),
            ]
            if let appStore { members["app_store"] = appStore.json }
            return .object(members)
        }
    }

    struct AppStoreStatus: Sendable, Equatable {
        /// `closed` (calls go through), `open` (failing fast), `half_open` (one probe out).
        var circuit: String
        var consecutiveFailures: Int
        /// While open: seconds until the next probe.
        var retryInSeconds: Int?

        var json: JSONValue {
            var members: [Identifier: JSONValue] = [
                "circuit": .string(circuit), "consecutive_failures": .int(consecutiveFailures),
            ]
            if let retryInSeconds { members["retry_in_seconds"] = .int(retryInSeconds) }
            return .object(members)
        }
    }

    static func appStoreStatus(_ client: VerifyReceiptClient) -> AppStoreStatus? {
        guard let state = client.breaker?.state else { return nil }
        switch state {
        case .closed(let failures): return AppStoreStatus(circuit: state.name, consecutiveFailures: failures)
        case .open(let until, _):
            return AppStoreStatus(
                circuit: state.name, consecutiveFailures: 0, retryInSeconds: max(.zero, until - client.now).secondsRoundedUp)
        case .halfOpen: return AppStoreStatus(circuit: state.name, consecutiveFailures: 0)
        }
    }

    static func readiness(database: DatabaseQueue, migrator: Migrator, appStore: AppStoreStatus? = nil) async -> HTTPResponse {
        do {
            let status = try await database.run { [migrator] db in try migrator.status(of: db) }
            let ready = status.pending.isEmpty
            return .json(
                Readiness(
                    status: ready ? "ready" : "not_ready", database: "ok",
                    migrationsApplied: status.applied.count, migrationsPending: status.pending.count, appStore: appStore
                ).json,
                status: ready ? .ok : .serviceUnavailable)
        } catch {
            return .json(
                Readiness(status: "not_ready", database: "\(error)", migrationsApplied: 0, migrationsPending: 0).json,
                status: .serviceUnavailable)
        }
    }
}

extension Duration {
    /// Whole seconds, a started second counting as one (for `Retry-After` and the like).
    var secondsRoundedUp: Int { Int(components.seconds) + (components.attoseconds > 0 ? 1 : 0) }
}
