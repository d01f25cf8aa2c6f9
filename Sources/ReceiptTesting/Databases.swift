import Storage

/// A private in-memory database with the repository's migrations applied.
package func migratedDatabase() throws -> Database {
    let db = try Database(path: ":memory:")
    _ = try Migrator(migrations: try Migration.load(from: migrationsDirectory)).migrate(db)
    return db
}
