package import FoundationEssentials

/// Applies ``Migration``s in order, each in one transaction together with its bookkeeping row in
/// `schema_migrations`. Refuses a database that has an applied migration it does not know, or one
/// whose checksum changed: the schema would no longer be what the code expects.
package struct Migrator: Sendable {
    package let migrations: [Migration]

    package init(migrations: [Migration]) {
        self.migrations = migrations
    }

    /// A row of `schema_migrations`.
    package struct Applied: Sendable, Equatable {
        package let version: Int
        package let name: String
        package let checksum: String
        package let appliedAt: Int64
    }

    /// What the database has and what it lacks.
    package struct Status: Sendable {
        package let applied: [Applied]
        /// Known migrations not applied yet, in order.
        package let pending: [Migration]
    }

    private static func bookkeeping(_ dialect: Database.Dialect) -> String {
        let integer = dialect == .sqlite ? "INTEGER" : "BIGINT"
        return """
            CREATE TABLE IF NOT EXISTS schema_migrations (
                version \(integer) PRIMARY KEY,
                name TEXT NOT NULL,
                checksum TEXT NOT NULL,
                applied_at \(integer) NOT NULL
            )
            """
    }

    /// PostgreSQL's advisory lock key that serialises migrations across processes ("receiptd" in ASCII).
    static let advisoryLock: Int64 = 0x7265_6365_6970_7464

    /// Checks the database against the known migrations without changing it (so it runs in a
    /// read-only transaction too: `/readyz` asks on a reader). A database without the bookkeeping
    /// table has every migration pending.
    package func status(of db: Database) throws(StorageError) -> Status {
        guard try db.hasTable("schema_migrations") else { return Status(applied: [], pending: migrations) }
        let statement = try db.prepare("SELECT version, name, checksum, applied_at FROM schema_migrations ORDER BY version")
        var applied: [Applied] = []
        while try statement.step() {
            applied.append(
                Applied(
                    version: Int(statement.int(0)), name: statement.text(1) ?? "", checksum: statement.text(2) ?? "",
                    appliedAt: statement.int(3)))
        }
        for row in applied {
            guard let known = migrations.first(where: { $0.version == row.version }) else {
                throw StorageError(
                    .migrationUnknown,
                    "the database has migration \(row.version) (\(row.name)) that this build does not know; refusing to start")
            }
            guard known.checksum == row.checksum else {
                throw StorageError(
                    .migrationChecksum,
                    "migration \(known.name) changed after it was applied (checksum \(row.checksum.prefix(12))… on record, \(known.checksum.prefix(12))… on disk); migrations must never be edited"
                )
            }
        }
        let appliedVersions = Set(applied.map(\.version))
        return Status(applied: applied, pending: migrations.filter { !appliedVersions.contains($0.version) })
    }

    /// Applies every pending migration, in order; returns the ones applied. With `dryRun`, only
    /// returns what would be applied. On PostgreSQL, processes starting at once take turns (an
    /// advisory lock), so the first migrates and the others find nothing pending. A SQLite file is
    /// migrated by the one process that serves it.
    @discardableResult
    package func migrate(_ db: Database, dryRun: Bool = false, now: () -> Date = Date.init) throws(StorageError) -> [Migration] {
        guard db.dialect == .postgresql else { return try migrateHoldingTheLock(db, dryRun: dryRun, now: now) }
        try db.execute("SELECT pg_advisory_lock(\(Self.advisoryLock))")
        defer { try? db.execute("SELECT pg_advisory_unlock(\(Self.advisoryLock))") }
        return try migrateHoldingTheLock(db, dryRun: dryRun, now: now)
    }

    private func migrateHoldingTheLock(_ db: Database, dryRun: Bool, now: () -> Date) throws(StorageError) -> [Migration] {
        if !dryRun { try db.execute(Self.bookkeeping(db.dialect)) }
        let pending = try status(of: db).pending
        if dryRun { return pending }
        for migration in pending {
            do {
                try db.transaction {
                    try db.execute(migration.sql)
                    try db.prepare("INSERT INTO schema_migrations (version, name, checksum, applied_at) VALUES (?, ?, ?, ?)")
                        .bind([migration.version, migration.name, migration.checksum, Int64(now().timeIntervalSince1970 * 1000)])
                        .run()
                }
            } catch {
                throw StorageError(.migrationFailed, "migration \(migration.name) failed and was rolled back: \(error)")
            }
        }
        return pending
    }
}
