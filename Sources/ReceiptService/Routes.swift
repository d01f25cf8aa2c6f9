import HTTPServer
import Storage

/// The HTTP surface of receiptd. Each route's handler is small and delegates to a service.
struct Routes: Sendable {
    let database: DatabaseQueue
    let migrator: Migrator
    let auth: APIAuth
    let receipts: ReceiptProcessor

    func router() -> Router {
        var router = Router()
        // Liveness: the process answers. Never touches the database.
        router.immediate(.get, "/healthz") { _, _ in
            .json(["status": "ok"])
        }
        // Readiness: the database answers and every known migration is applied.
        router.on(.get, "/readyz") { _, _ in
            await Self.readiness(database: database, migrator: migrator)
        }
        // A mobile app posts its receipt (public or secret key): verify, store, answer the document.
        router.on(.post, "/v1/receipts") { [auth, receipts] request, context in
            if let refused = auth.check(request, requires: .public, requestID: context.requestID) { return refused }
            return await receipts.post(request, requestID: context.requestID)
        }
        // A backend reads a subscriber from storage, without calling Apple (secret key).
        router.on(.get, "/v1/subscribers/{app_user_id}") { [auth, receipts] request, context in
            if let refused = auth.check(request, requires: .secret, requestID: context.requestID) { return refused }
            guard let user = context.parameters["app_user_id"], !user.isEmpty else {
                return APIError.invalidRequest("The app_user_id in the path is empty.").response(requestID: context.requestID)
            }
            return await receipts.subscriber(user, request: request, requestID: context.requestID)
        }
        // A backend reads a subscriber's lifecycle events, newest first (secret key).
        router.on(.get, "/v1/subscribers/{app_user_id}/events") { [auth, receipts] request, context in
            if let refused = auth.check(request, requires: .secret, requestID: context.requestID) { return refused }
            guard let user = context.parameters["app_user_id"], !user.isEmpty else {
                return APIError.invalidRequest("The app_user_id in the path is empty.").response(requestID: context.requestID)
            }
            return await receipts.events(user, request: request, requestID: context.requestID)
        }
        return router
    }

    /// The body of `/readyz`.
    struct Readiness: Codable, Sendable, Equatable {
        var status: String
        var database: String
        var migrationsApplied: Int
        var migrationsPending: Int

        enum CodingKeys: String, CodingKey {
            case status, database
            case migrationsApplied = "migrations_applied"
            case migrationsPending = "migrations_pending"
        }
    }

    static func readiness(database: DatabaseQueue, migrator: Migrator) async -> HTTPResponse {
        do {
            let status = try await database.run { [migrator] db in try migrator.status(of: db) }
            let ready = status.pending.isEmpty
            return .json(
                Readiness(
                    status: ready ? "ready" : "not_ready", database: "ok",
                    migrationsApplied: status.applied.count, migrationsPending: status.pending.count),
                status: ready ? .ok : .serviceUnavailable)
        } catch {
            return .json(
                Readiness(status: "not_ready", database: "\(error)", migrationsApplied: 0, migrationsPending: 0),
                status: .serviceUnavailable)
        }
    }
}
