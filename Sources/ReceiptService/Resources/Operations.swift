import AppStore
import Entitlements
import HTTPServer
import Identifiers
import JSON
import Operations
import ReceiptCore
import Resilience

/// What runs the service: liveness, readiness, metrics, the OpenAPI document and the web console.
struct OperationsRoutes: RouteGroup {
    let checkReadiness: CheckReadiness
    let webhooks: WebhookOperations
    let console: Console
    let appStore: VerifyReceiptClient
    let telemetry: Telemetry
    let documentCache: SubscriberCache
    let metricsRequireKey: Bool
    let openAPI: [UInt8]?

    func add(to api: inout API) {
        // Liveness: the process answers. Never touches the database.
        api.immediate(.get, "/healthz", access: .anyone) { _, _ in
            .json(.object(["status": .string("ok")]))
        }
        // Readiness: the database answers and every known migration is applied.
        api.on(.get, "/readyz", access: .anyone) { [checkReadiness, appStore, webhooks] _, _ in
            Self.readiness(
                await checkReadiness(), appStore: Self.appStoreStatus(appStore), webhooks: try? await webhooks.status())
        }
        // Prometheus text: every family in Docs/operations.md "Metrics" (a secret key unless `metrics.requireKey` is false).
        api.immediate(.get, "/metrics", access: metricsRequireKey ? .secretKey : .anyone) {
            [appStore, telemetry, documentCache] _, _ in
            HTTPResponse(
                status: .ok, headers: ["Content-Type": "text/plain; version=0.0.4; charset=utf-8"],
                body: telemetry.scrape(breaker: appStore.breaker?.state, cachedDocuments: documentCache.count))
        }
        // The API's contract (OpenAPI 3.1), for integrators and the CI's schemathesis run.
        api.immediate(.get, "/openapi.yaml", access: .anyone) { [openAPI] _, _ in
            guard let openAPI else {
                throw APIError(status: .notFound, code: "not_found", message: "This receiptd has no OpenAPI document.")
            }
            return HTTPResponse(status: .ok, headers: ["Content-Type": "application/yaml"], body: openAPI)
        }
        // The web console: its page and files, no key (they hold no data; the page asks for one).
        for path in console.paths {
            api.immediate(.get, path, access: .anyone) { [console] request, _ in console.response(path, request: request) }
        }
    }

    /// The body of `/readyz`.
    struct Readiness: Sendable, Equatable {
        var status: String
        var database: String
        var migrationsApplied: Int
        var migrationsPending: Int
        /// The App Store circuit breaker: informative only (GETs are served whatever Apple does).
        var appStore: AppStoreStatus? = nil
        /// Each webhook endpoint's backlog: informative only (the API is served whatever receivers do).
        var webhooks: [WebhookOperations.EndpointStatus]? = nil

        var json: JSONValue {
            var members: [Identifier: JSONValue] = [
                "status": .string(status), "database": .string(database),
                "migrations_applied": .int(migrationsApplied), "migrations_pending": .int(migrationsPending),
            ]
            if let appStore { members["app_store"] = appStore.json }
            if let webhooks, !webhooks.isEmpty {
                var endpoints: [Identifier: JSONValue] = [:]
                for e in webhooks {
                    endpoints[Identifier(e.name)] = .object([
                        "pending": .int(e.pending), "oldest_pending_seconds": .int(Int(e.oldestPendingSeconds)),
                    ])
                }
                members["webhooks"] = .object(endpoints)
            }
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

    static func readiness(
        _ outcome: CheckReadiness.Outcome, appStore: AppStoreStatus? = nil, webhooks: [WebhookOperations.EndpointStatus]? = nil
    ) -> HTTPResponse {
        if let error = outcome.databaseError {
            return .json(
                Readiness(status: "not_ready", database: error, migrationsApplied: 0, migrationsPending: 0).json,
                status: .serviceUnavailable)
        }
        return .json(
            Readiness(
                status: outcome.ready ? "ready" : "not_ready", database: "ok", migrationsApplied: outcome.migrationsApplied,
                migrationsPending: outcome.migrationsPending, appStore: appStore, webhooks: webhooks
            ).json,
            status: outcome.ready ? .ok : .serviceUnavailable)
    }
}
