package import CoreMetrics
package import DatabaseEngine

/// Where the data lives: SQLite (the default, one process) or PostgreSQL (several instances).
package struct DatabaseSettings: Sendable {
    /// SQLite file; its folder is created if missing. `:memory:` for a throwaway database.
    package var path: String
    /// How long a statement waits for a lock before failing (SQLite).
    package var busyTimeout: Duration
    /// Folder of the numbered `.sql` migration files (PostgreSQL's in its `postgresql/` folder).
    package var migrationsDirectory: String
    /// How many subscriber documents GET keeps rendered in memory (0: none). See `SubscriberCache`.
    package var documentCache: Int = 10_000
    /// How many connections serve reads beside the writer (SQLite: read-only) or the writing
    /// connections (PostgreSQL), each on a thread of its own (0: reads queue with the saves).
    /// See `DatabaseQueue`.
    package var readers: Int = 2
    /// `database.url`, a secret (it may hold a password): `postgresql://…` (libpq's syntax)
    /// selects PostgreSQL; `sqlite:PATH` SQLite at PATH; unset, SQLite at ``path``.
    package var url: String?
    /// How many connections each instance opens to PostgreSQL for saves (``readers`` more serve reads).
    package var connections: Int = 4
    /// `database.replicaUrls`, secrets: PostgreSQL streaming replicas of ``url``'s primary, for
    /// the reads that may go to one (see `DatabaseQueue.read(replicaSeeing:_:dependents:)`).
    package var replicaURLs: [String] = []
    /// How far behind the primary a replica may be and still serve reads.
    package var maxReplicaLag: Duration = .seconds(1)

    package init(
        path: String, busyTimeout: Duration, migrationsDirectory: String, documentCache: Int = 10_000, readers: Int = 2,
        url: String? = nil, connections: Int = 4
    ) {
        self.path = path
        self.busyTimeout = busyTimeout
        self.migrationsDirectory = migrationsDirectory
        self.documentCache = documentCache
        self.readers = readers
        self.url = url
        self.connections = connections
    }

    /// The database ``url`` (or ``path``) names.
    package enum Location: Sendable, Equatable {
        case sqlite(path: String)
        case postgresql(url: String)

        /// `postgresql://…` (or `postgres://…`), or `sqlite:PATH`; nil for anything else.
        package init?(url: String) {
            if url.hasPrefix("postgresql://") || url.hasPrefix("postgres://") {
                self = .postgresql(url: url)
            } else if url.hasPrefix("sqlite:"), url.count > "sqlite:".count {
                self = .sqlite(path: String(url.dropFirst("sqlite:".count)))
            } else {
                return nil
            }
        }

        package var isPostgreSQL: Bool { if case .postgresql = self { true } else { false } }

        /// One connection to it.
        package func connect(busyTimeout: Duration = .seconds(5)) throws -> Database {
            switch self {
            case .sqlite(let path): try Database(path: path, busyTimeout: busyTimeout)
            case .postgresql(let url): try Database(postgresURL: url)
            }
        }
    }

    /// Where ``url`` points, else ``path``; nil when ``url`` is neither form.
    package var location: Location? { url.map(Location.init(url:)) ?? .sqlite(path: path) }

    /// What logs may say of the database: the SQLite path, or `postgresql` (never the URL).
    package var name: String {
        switch location {
        case .sqlite(let path)?: path
        case .postgresql?: "postgresql"
        case nil: "invalid"
        }
    }

    /// The migrations of the configured database's dialect.
    package func migrations() throws -> [Migration] {
        try migrations(for: location.map { if case .postgresql = $0 { .postgresql } else { .sqlite } } ?? .sqlite)
    }

    /// The migrations of `dialect`, under ``migrationsDirectory``.
    package func migrations(for dialect: Database.Dialect) throws -> [Migration] {
        try Migration.load(from: Migration.directory(for: dialect, under: migrationsDirectory))
    }

    /// Opens the configured database for the service: SQLite's writer and readers, or pools of
    /// PostgreSQL connections for saves and for reads.
    package func openQueue(metrics: any MetricsFactory) throws -> DatabaseQueue {
        switch location {
        case .sqlite(let path)?:
            try DatabaseQueue(path: path, busyTimeout: busyTimeout, metrics: metrics, readers: readers)
        case .postgresql(let url)?:
            try DatabaseQueue(
                postgresURL: url, connections: connections, readers: readers, replicaURLs: replicaURLs,
                maxReplicaLag: maxReplicaLag, metrics: metrics)
        case nil:
            throw StorageError(.open, "database.url " + Self.urlForms)
        }
    }

    /// Opens one connection to the configured database, for the command-line tools.
    package func openConnection() throws -> Database {
        guard let location else { throw StorageError(.open, "database.url " + Self.urlForms) }
        return try location.connect(busyTimeout: busyTimeout)
    }

    package static let urlForms = "must be postgresql://… or sqlite:PATH"
}
