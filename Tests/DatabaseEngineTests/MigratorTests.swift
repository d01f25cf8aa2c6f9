import Foundation
import ReceiptTesting
import Testing

@testable import DatabaseEngine
@testable import Storage

/// A fresh folder under the temporary directory, removed by the caller.
func temporaryDirectory() -> String {
    let path = NSTemporaryDirectory() + "receiptd-tests-" + UUID().uuidString
    try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}

@Suite("Migrator")
struct MigratorTests {
    let first = Migration(version: 1, name: "0001_a", sql: "CREATE TABLE a (x INTEGER);")
    let second = Migration(version: 2, name: "0002_b", sql: "CREATE TABLE b (y INTEGER); INSERT INTO a VALUES (1);")

    @Test func appliesInOrderOnceEach() throws {
        let db = try Database(path: ":memory:")
        let migrator = Migrator(migrations: [first, second])
        #expect(try migrator.migrate(db).map(\.version) == [1, 2])
        #expect(try migrator.migrate(db).isEmpty)
        #expect(try db.scalarInt("SELECT count(*) FROM a") == 1)
        #expect(try db.scalarInt("SELECT count(*) FROM schema_migrations") == 2)
    }

    @Test func dryRunChangesNothing() throws {
        let db = try Database(path: ":memory:")
        let migrator = Migrator(migrations: [first, second])
        #expect(try migrator.migrate(db, dryRun: true).map(\.version) == [1, 2])
        #expect(try db.scalarInt("SELECT count(*) FROM sqlite_master WHERE name = 'a'") == 0)
        #expect(try migrator.status(of: db).pending.count == 2)
    }

    @Test func refusesAnEditedMigration() throws {
        let db = try Database(path: ":memory:")
        try Migrator(migrations: [first]).migrate(db)
        let edited = Migration(version: 1, name: "0001_a", sql: "CREATE TABLE a (x TEXT);")
        #expect(throws: StorageError.self) { try Migrator(migrations: [edited]).migrate(db) }
        do {
            try Migrator(migrations: [edited]).migrate(db)
        } catch {
            #expect(error.code == .migrationChecksum)
        }
    }

    @Test func refusesAnUnknownAppliedMigration() throws {
        let db = try Database(path: ":memory:")
        try Migrator(migrations: [first, second]).migrate(db)
        do {
            try Migrator(migrations: [first]).migrate(db)
            Issue.record("an unknown applied migration was accepted")
        } catch {
            #expect(error.code == .migrationUnknown)
        }
    }

    @Test func aFailingMigrationRollsBackWithItsBookkeeping() throws {
        let db = try Database(path: ":memory:")
        let broken = Migration(
            version: 2, name: "0002_broken", sql: "CREATE TABLE c (z INTEGER); INSERT INTO nowhere VALUES (1);")
        do {
            try Migrator(migrations: [first, broken]).migrate(db)
            Issue.record("a failing migration was reported as applied")
        } catch {
            #expect(error.code == .migrationFailed)
        }
        #expect(try db.scalarInt("SELECT count(*) FROM sqlite_master WHERE name = 'c'") == 0)
        #expect(try db.scalarInt("SELECT max(version) FROM schema_migrations") == 1)
    }

    @Test func loadsNumberedFilesInOrder() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try "CREATE TABLE b (y);".write(toFile: dir + "/0002_b.sql", atomically: true, encoding: .utf8)
        try "CREATE TABLE a (x);".write(toFile: dir + "/0001_a.sql", atomically: true, encoding: .utf8)
        try "notes".write(toFile: dir + "/README.md", atomically: true, encoding: .utf8)
        let migrations = try Migration.load(from: dir)
        #expect(migrations.map(\.name) == ["0001_a", "0002_b"])
        #expect(migrations[0].checksum.count == 64)
    }

    @Test func refusesBadlyNamedOrDuplicateFiles() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try "x".write(toFile: dir + "/0001_a.sql", atomically: true, encoding: .utf8)
        try "y".write(toFile: dir + "/001_b.sql", atomically: true, encoding: .utf8)
        #expect(throws: StorageError.self) { try Migration.load(from: dir) }
        try FileManager.default.removeItem(atPath: dir + "/001_b.sql")
        try "z".write(toFile: dir + "/init.sql", atomically: true, encoding: .utf8)
        #expect(throws: StorageError.self) { try Migration.load(from: dir) }
    }

    @Test(arguments: await testDialects())
    func theProjectMigrationsApply(dialect: Database.Dialect) async throws {
        let migrations = try Migration.load(from: Migration.directory(for: dialect, under: migrationsDirectory))
        #expect(!migrations.isEmpty)
        let db = try await emptyDatabase(dialect)
        #expect(try Migrator(migrations: migrations).migrate(db).count == migrations.count)
        #expect(try Migrator(migrations: migrations).status(of: db).pending.isEmpty)
    }

    /// 0022: the rates' revision keeps its value in a table of its own; on SQLite the rollups'
    /// tables leave the database (their file is the queue's), on PostgreSQL they stay.
    @Test(arguments: await testDialects())
    func theRatesRevisionOutlivesTheRollupsMove(dialect: Database.Dialect) async throws {
        let migrations = try Migration.load(from: Migration.directory(for: dialect, under: migrationsDirectory))
        let before = Array(migrations.prefix { !$0.name.hasPrefix("0022") })
        let db = try await emptyDatabase(dialect)
        _ = try Migrator(migrations: before).migrate(db)
        try db.execute("UPDATE rollup_state SET rates_revision = 3, fingerprint = 'built for rates 3'")
        _ = try Migrator(migrations: migrations).migrate(db)
        #expect(try AnalyticsStore(db).ratesRevision() == 3)
        _ = try AnalyticsStore(db).importRates([.init(day: "2026-01-02", currency: "USD", perEuro: "1.1")])
        #expect(try AnalyticsStore(db).ratesRevision() == 4)
        if dialect == .sqlite {
            #expect(try db.scalarInt("SELECT count(*) FROM sqlite_schema WHERE name LIKE 'rollup%'") == 0)
        } else {
            #expect(try RollupStore(db).state().fingerprint == "built for rates 3")
        }
    }

    /// 0023: however ANALYZE samples a bulk load (a purchase's transactions together), PostgreSQL's
    /// planner takes a purchase to have about ten transactions, not the sample's guess.
    @Test(.enabled("PostgreSQL is not installed here") { await PostgresTestServer.isAvailable() })
    func postgreSQLsEstimateOfAPurchasesTransactionsOutlivesAnalyze() async throws {
        let db = try await migratedDatabase(.postgresql)
        try db.execute(
            """
            INSERT INTO transactions (transaction_id, original_transaction_id, product_id, bundle_id, environment,
                is_trial_period, is_in_intro_offer_period, is_upgraded, raw_json, first_seen_at, updated_at)
            SELECT 't' || n, 'o' || (n / 50), 'monthly', 'com.x', 'sandbox', 0, 0, 0, '{}', 0, 0
            FROM generate_series(1, 5000) AS n;
            ANALYZE transactions;
            """)
        // 101 purchases of 5,000 transactions: ANALYZE alone would say 101.
        let estimate = try db.scalarText(
            "SELECT n_distinct::text FROM pg_stats WHERE tablename = 'transactions' AND attname = 'original_transaction_id'")
        #expect(estimate == "-0.1")
    }

    @Test func bothDialectsHaveTheSameMigrations() throws {
        let sqlite = try Migration.load(from: Migration.directory(for: .sqlite, under: migrationsDirectory))
        let postgres = try Migration.load(from: Migration.directory(for: .postgresql, under: migrationsDirectory))
        #expect(sqlite.map(\.name) == postgres.map(\.name))
    }

    @Test(.enabled("PostgreSQL is not installed here") { await PostgresTestServer.isAvailable() })
    func threeProcessesStartingAtOnceOnPostgreSQLMigrateOnce() async throws {
        let url = try await PostgresTestServer.freshDatabase()
        let migrations = try Migration.load(from: Migration.directory(for: .postgresql, under: migrationsDirectory))
        // Three connections (three processes' worth), each on a thread of its own, started together.
        let applied = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<3 {
                group.addTask {
                    try await onItsOwnThread {
                        try Migrator(migrations: migrations).migrate(try Database(postgresURL: url)).count
                    }
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }.sorted()
        }
        #expect(applied == [0, 0, migrations.count])
        #expect(try Database(postgresURL: url).scalarInt("SELECT count(*) FROM schema_migrations") == Int64(migrations.count))
    }
}

extension MigratorTests {
    /// SQLite's migrations and PostgreSQL's are one history told twice: each number and name in
    /// one folder stands in the other, so a database moved with `copy-data` stands where its
    /// source stood, and a change made for one dialect is not forgotten for the other.
    @Test func bothDialectsListTheSameMigrations() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Migrations")
        func names(_ folder: URL) throws -> [String] {
            try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".sql") }.sorted()
        }
        let sqlite = try names(root)
        let postgresql = try names(root.appendingPathComponent("postgresql"))
        #expect(sqlite.count > 30)
        #expect(sqlite == postgresql, "only in one: \(Set(sqlite).symmetricDifference(postgresql).sorted())")
        // Numbered from 0001 without a gap, each number once.
        #expect(sqlite.map { Int($0.prefix(4)) } == (1...sqlite.count).map { $0 })
    }
}
