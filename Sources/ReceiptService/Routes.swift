import HTTPServer
import Storage

/// The HTTP surface of receiptd. Each route's handler is small and delegates to a service.
struct Routes: Sendable {
    let database: DatabaseQueue
    let migrator: Migrator

    func router() -> Router {
        var router = Router()
        // Liveness: the process answers. Never touches the database.
        router.immediate(.get, "/healthz") { _, _ in
            .json(["status": "ok"])
        }
        // Readiness: the database answers and every known migration is applied.
        router.on(.get, "/readyz") { _, _ in
            await readiness()
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

    func readiness() async -> HTTPResponse {
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
