import DatabaseEngine
import ReceiptTesting
import Storage
import Testing

@testable import Operations

@Suite struct CheckReadinessTests {
    @Test func readyOnlyWhenEveryKnownMigrationIsApplied() async throws {
        try await withScratchDirectory("receiptd-readiness") { dir in
            let queue = try DatabaseQueue(path: dir + "/db.sqlite")
            let known = try Migration.load(from: migrationsDirectory)
            let before = await CheckReadiness(database: queue, migrator: Migrator(migrations: known))()
            #expect(before == .init(databaseError: nil, migrationsApplied: 0, migrationsPending: known.count) && !before.ready)
            try queue.runBlocking { db in _ = try Migrator(migrations: known).migrate(db) }
            let after = await CheckReadiness(database: queue, migrator: Migrator(migrations: known))()
            #expect(after.ready && after.migrationsApplied == known.count)
            // A migration this process knows and the database has not got (a deploy half done).
            let newer = Migrator(migrations: known + [Migration(version: 999, name: "0999_next", sql: "SELECT 1;")])
            let pending = await CheckReadiness(database: queue, migrator: newer)()
            #expect(!pending.ready && pending.migrationsPending == 1)
        }
    }
}
