import Storage

/// A private in-memory SQLite database with the repository's migrations applied.
package func migratedDatabase() throws -> Database {
    let db = try Database(path: ":memory:")
    _ = try Migrator(migrations: try Migration.load(from: migrationsDirectory)).migrate(db)
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
