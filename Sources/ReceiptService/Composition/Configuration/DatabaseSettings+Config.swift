import Storage

extension DatabaseSettings {
    /// `database.*`: SQLite's file or PostgreSQL's URL (a secret), connections, the migrations.
    static func read(_ c: ConfigLoader) throws(ConfigurationError) -> DatabaseSettings {
        var database = DatabaseSettings(
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
        // Streaming replicas of the primary: RECEIPTD_DATABASE_REPLICA_URLS (comma-separated) or …_FILE.
        database.replicaURLs = try c.secretList("database.replicaUrls")
        database.maxReplicaLag = try c.milliseconds("database.replicaMaxLagMs", default: 1000)
        if !database.replicaURLs.isEmpty {
            guard database.location?.isPostgreSQL == true else {
                throw ConfigurationError(key: "database.replicaUrls", message: "needs database.url to be a PostgreSQL primary")
            }
            guard database.replicaURLs.allSatisfy({ DatabaseSettings.Location(url: $0)?.isPostgreSQL == true }) else {
                throw ConfigurationError(
                    key: "database.replicaUrls",
                    message: "must be postgresql://… URLs, comma-separated (one server each: a multi-host URL is not one replica)"
                )
            }
        }
        return database
    }
}
