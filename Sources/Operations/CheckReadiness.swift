package import DatabaseEngine
import ReceiptCore
import Storage

/// Whether this instance can serve: the database answers and every migration it knows is applied
/// (a half-finished deploy has one pending). Asked by `/readyz` on every probe.
package struct CheckReadiness: Sendable {
    /// What the database said.
    package struct Outcome: Sendable, Equatable {
        /// nil when the database answered; else why not.
        package var databaseError: String?
        package var migrationsApplied: Int
        package var migrationsPending: Int
        package var ready: Bool { databaseError == nil && migrationsPending == 0 }
    }

    let database: DatabaseQueue
    let migrator: Migrator

    package init(database: DatabaseQueue, migrator: Migrator) {
        self.database = database
        self.migrator = migrator
    }

    package func callAsFunction() async -> Outcome {
        do {
            let status = try await database.read { [migrator] db in try migrator.status(of: db) }
            return Outcome(databaseError: nil, migrationsApplied: status.applied.count, migrationsPending: status.pending.count)
        } catch {
            return Outcome(databaseError: "\(error)", migrationsApplied: 0, migrationsPending: 0)
        }
    }
}
