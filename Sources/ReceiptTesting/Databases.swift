package import DatabaseEngine
import Foundation
package import ReceiptService
import Storage

/// A private in-memory SQLite database with the repository's migrations applied, and the chart
/// rollups' file (private, in memory too) attached, as a `DatabaseQueue` on `:memory:` has it.
package func migratedDatabase() throws -> Database {
    let db = try Database(path: ":memory:")
    _ = try Migrator(migrations: try Migration.load(from: migrationsDirectory)).migrate(db)
    try RollupStore.attachFile(":memory:", to: db)
    return db
}

/// The dialects the storage tests run on here: SQLite always, PostgreSQL where it is installed
/// (``PostgresTestServer``). For `@Test(arguments: await testDialects())`.
package func testDialects() async -> [Database.Dialect] {
    await PostgresTestServer.isAvailable() ? [.sqlite, .postgresql] : [.sqlite]
}

/// An empty database of the dialect: SQLite in memory, or a new database on the test server.
package func emptyDatabase(_ dialect: Database.Dialect) async throws -> Database {
    switch dialect {
    case .sqlite: try Database(path: ":memory:")
    case .postgresql: try Database(postgresURL: try await PostgresTestServer.freshDatabase())
    }
}

/// A database of the dialect with that dialect's migrations applied.
package func migratedDatabase(_ dialect: Database.Dialect) async throws -> Database {
    switch dialect {
    case .sqlite: try migratedDatabase()
    case .postgresql: try Database(postgresURL: try await PostgresTestServer.freshDatabase(migrated: true))
    }
}

/// A queue on a migrated database of the dialect: a SQLite file in `directory`, or a new
/// database on the test server.
package func migratedQueue(_ dialect: Database.Dialect, in directory: String) async throws -> DatabaseQueue {
    switch dialect {
    case .sqlite:
        _ = try Migrator(migrations: try Migration.load(from: migrationsDirectory)).migrate(
            try Database(path: directory + "/db.sqlite"))
        return try DatabaseQueue(path: directory + "/db.sqlite")
    case .postgresql:
        return try DatabaseQueue(postgresURL: try await PostgresTestServer.freshDatabase(migrated: true))
    }
}

/// The database the service tests run on: SQLite files, or PostgreSQL when the environment has
/// `RECEIPTD_TEST_DATABASE=postgresql` (`.ci/run` runs the service suites both ways). ``withService``
/// and ``withClockedService`` hand their body where it is: a file path or a URL.
package enum TestDatabase {
    package static let isPostgreSQL = ProcessInfo.processInfo.environment["RECEIPTD_TEST_DATABASE"] == "postgresql"

    /// Points `configuration` at a new PostgreSQL database when the tests run on PostgreSQL (the
    /// application migrates it, as in production); what ``open(_:)`` takes: the URL, else `path`.
    package static func place(_ configuration: inout ServiceConfiguration, path: String) async throws -> String {
        guard isPostgreSQL else {
            // A copy of a file migrated once per process: the application finds every migration
            // applied. Migrating each service's file anew cost a suite of them, all starting at
            // once on two cores, a minute of CPU in which the simulators' handlers could not run.
            if configuration.database.migrationsDirectory == migrationsDirectory,
                !FileManager.default.fileExists(atPath: path)
            {
                try await onItsOwnThread { try FileManager.default.copyItem(atPath: try sqliteTemplate.get(), toPath: path) }
            }
            return path
        }
        let url = try await PostgresTestServer.freshDatabase()
        configuration.database.url = url
        configuration.database.connections = 2  // a hundred apps at once share the test server
        return url
    }

    /// A SQLite file with the repository's migrations applied, made once per test process (its
    /// write-ahead log checkpointed into it, so the file alone is the database).
    private static let sqliteTemplate = Result { () throws -> String in
        let path = NSTemporaryDirectory() + "receiptd-template-\(getpid()).sqlite"
        for file in [path, path + "-wal", path + "-shm"] { try? FileManager.default.removeItem(atPath: file) }
        do {
            let db = try Database(path: path)
            _ = try Migrator(migrations: try Migration.load(from: migrationsDirectory)).migrate(db)
            _ = try db.scalarText("PRAGMA wal_checkpoint(TRUNCATE)")
        }
        atexit { try? FileManager.default.removeItem(atPath: NSTemporaryDirectory() + "receiptd-template-\(getpid()).sqlite") }
        return path
    }

    /// After a service stopped: its PostgreSQL database goes, with every connection still open to
    /// it (nothing to do for a SQLite file, which its scratch directory takes).
    package static func release(_ location: String) async {
        guard isPostgreSQL else { return }
        await PostgresTestServer.drop(location)
    }

    /// A connection to the service's database beside it (a file path or a PostgreSQL URL).
    package static func open(_ location: String) throws -> Database {
        try (DatabaseSettings.Location(url: location) ?? .sqlite(path: location)).connect()
    }
}

/// Every `table.column: rows` whose text anywhere contains `needle`, over every table receiptd
/// keeps (``DataCopy/tables``), on either dialect: where an erased person could still be read.
package func rowsMentioning(_ needle: String, in db: Database) throws -> [String] {
    var found: [String] = []
    for table in DataCopy.tables {
        let names =
            db.dialect == .sqlite
            ? "SELECT name FROM pragma_table_info('\(table)')"
            : "SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = '\(table)'"
        let q = try db.prepare(names)
        var columns: [String] = []
        while try q.step() { columns.append(q.text(0)!) }
        for column in columns {
            let n = try db.scalarInt("SELECT count(*) FROM \(table) WHERE CAST(\(column) AS TEXT) LIKE '%\(needle)%'") ?? 0
            if n > 0 { found.append("\(table).\(column): \(n)") }
        }
    }
    return found
}
