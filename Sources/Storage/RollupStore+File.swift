package import DatabaseEngine

// SQLite's rollups file: the tables RollupStore reads and writes, in a file of their own beside
// the database's (Migrations/0022), made again whenever their schema changes.

extension RollupStore {
    /// The schema of SQLite's rollups file (the tables Migrations/0019 to 0021 made in the
    /// database, and 0022 moved here; rollup_splits as PostgreSQL's 0040). The file holds nothing
    /// but what the rollup keeper derives from the database, so it has no migrations: a file of
    /// another ``fileVersion`` (or none) is emptied and made again, and the keeper rebuilds the
    /// rollups (they say `building` again).
    /// Its statements make the tables in `schema` (`main`, or the name the file is attached as).
    static func fileSchema(in schema: String) -> String {
        """
        CREATE TABLE \(schema).rollup_state (
            id INTEGER PRIMARY KEY CHECK (id = 1),
            fingerprint TEXT NOT NULL,
            phase TEXT NOT NULL CHECK (phase IN ('building', 'ready')),
            rebuild_after TEXT,
            changes_through INTEGER NOT NULL
        ) STRICT;
        INSERT INTO \(schema).rollup_state (id, fingerprint, phase, rebuild_after, changes_through) VALUES (1, '', 'building', NULL, 0);
        CREATE TABLE \(schema).rollup_holders (
            app_user_id TEXT PRIMARY KEY,
            rows TEXT NOT NULL
        ) STRICT, WITHOUT ROWID;
        \(sumsTable("rollup_days", key: dayKey, in: schema))
        \(sumsTable("rollup_splits", key: splitKey, in: schema))
        CREATE TABLE \(schema).rollup_moments (
            day INTEGER NOT NULL,
            environment TEXT NOT NULL,
            chart TEXT NOT NULL,
            app_user_id TEXT NOT NULL,
            items TEXT NOT NULL,
            PRIMARY KEY (day, environment, chart, app_user_id)
        ) STRICT, WITHOUT ROWID;
        CREATE INDEX \(schema).rollup_moments_by_holder ON rollup_moments (app_user_id);
        CREATE TABLE \(schema).rollup_marks (
            environment TEXT NOT NULL,
            family TEXT NOT NULL CHECK (family IN ('f', 's', 'c')),
            day INTEGER NOT NULL,
            app_user_id TEXT NOT NULL,
            PRIMARY KEY (environment, family, day, app_user_id)
        ) STRICT, WITHOUT ROWID;
        """
    }

    /// A table of sums by day, keyed by `key` (``dayKey``, or ``splitKey`` with a split's two
    /// columns): text but for the flag and the days, and each key's value and item count.
    private static func sumsTable(_ table: String, key: String, in schema: String) -> String {
        let integers: Set = ["settled", "at_day", "until_day", "valid_from_day", "valid_until_day", "cohort_day"]
        let columns = key.split(separator: ",").map { $0.trimmingPrefix(" ") }.map { column in
            "    \(column) \(integers.contains(String(column)) ? "INTEGER" : "TEXT") NOT NULL,\n"
        }
        return "CREATE TABLE \(schema).\(table) (\n" + columns.joined()
            + "    value INTEGER NOT NULL,\n    items INTEGER NOT NULL,\n    PRIMARY KEY (\(key))\n) STRICT, WITHOUT ROWID;"
    }

    /// ``fileSchema(in:)``'s version, kept as the file's `user_version`: moves with every change to it.
    static let fileVersion: Int64 = 2

    /// Attaches SQLite's rollups file at `path` (`:memory:`: a private one) to `db` as `rollups`,
    /// made (again) as ``prepareFile(_:schema:)`` says: one connection that writes both the
    /// database and the rollups, as a ``DatabaseQueue`` on `:memory:` has (and tests).
    package static func attachFile(_ path: String, to db: Database) throws {
        try db.attach(path, as: file.name)
        try prepareFile(db, schema: file.name)
    }

    /// SQLite's rollups file as the database engine opens it beside the database.
    package static let file = AttachedFile(name: "rollups") { db, schema in try prepareFile(db, schema: schema) }

    /// Makes the rollups file `db` (a connection to it alone, or to a database with it attached
    /// as `rollups`, in `schema`) hold ``fileSchema(in:)``: as it is when it does already, else emptied
    /// and made again. One write transaction, so processes opening it at once agree.
    static func prepareFile(_ db: Database, schema: String = "main") throws {
        try db.transaction {
            guard try db.scalarInt("PRAGMA \(schema).user_version") != fileVersion else { return }
            var tables: [String] = []
            let q = try db.prepare("SELECT name FROM \(schema).sqlite_schema WHERE type = 'table'")
            while try q.step() { tables.append(q.text(0)!) }
            q.reset()
            for table in tables where !table.hasPrefix("sqlite_") { try db.execute("DROP TABLE \(schema).\(table)") }
            try db.execute(fileSchema(in: schema))
            try db.execute("PRAGMA \(schema).user_version = \(fileVersion)")
        }
    }
}
