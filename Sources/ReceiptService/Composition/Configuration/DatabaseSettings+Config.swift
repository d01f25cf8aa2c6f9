import Storage

extension DatabaseSettings {
    /// `database.*`: SQLite's file or PostgreSQL's URL (a secret), connections, the migrations.
    static func read(_ c: ConfigLoader) throws(ConfigurationError) -> DatabaseSettings {
        let database = DatabaseSettings(
            path: try c.string("database.path", default: "data/receiptd.sqlite"),
            busyTimeout: try c.milliseconds("database.busyTimeoutMs", default: 5000),
            migrationsDirectory: try c.string("database.migrationsDirectory", default: "Migrations"),
            documentCache: try c.int("database.documentCache", default: 10_000, range: 0...10_000_000),
            readers: try c.int("database.readers", default: 2, range: 0...64),
            // PostgreSQL (postgresql://…) or SQLite (sqlite:PATH): RECEIPTD_DATABASE_URL or …_FILE.
            url: try c.secret("database.url"),
            connections: try c.int("database.connections", default: 4, range: 1...256))
        guard !database.path.isEmpty else { throw ConfigurationError(key: "database.path", message: "must not be empty") }
        guard database.location != nil else { throw ConfigurationError(key: "database.url", message: DatabaseSettings.urlForms) }
        return database
    }
}
