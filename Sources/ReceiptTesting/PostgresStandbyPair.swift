import DatabaseEngine
import Foundation
import Storage

/// A PostgreSQL primary and a streaming replica of it on loopback, for the tests of reads from
/// replicas: a cluster of its own (not ``PostgresTestServer``'s, whose many databases a base
/// backup would copy), one migrated database, and a hot standby made from it with `pg_basebackup`
/// that the test may kill and start again. ``stop()`` (or the process's exit) removes both.
package final class PostgresStandbyPair: Sendable {
    package let primaryURL: String
    package let replicaURL: String
    private let primary: PostgresTestServer.Running
    private let replica: PostgresTestServer.Running

    /// Starts the primary, migrates a database on it, makes the replica from a base backup and
    /// starts it; returns once the replica answers.
    package static func start() async throws -> PostgresStandbyPair {
        try await onItsOwnThread { try PostgresStandbyPair() }
    }

    private init() throws {
        let binaries = try PostgresTestServer.binaries()
        let asPostgres = getuid() == 0
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "receiptd-pg-pair-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        ).path
        try FileManager.default.createDirectory(
            atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o777])
        var primary = PostgresTestServer.Running(directory: directory, port: 0, binaries: binaries, asPostgres: asPostgres)
        try PostgresTestServer.run(
            primary, "initdb",
            ["-D", "\(directory)/primary", "-A", "trust", "-U", "postgres", "-E", "UTF8", "--locale=C", "--no-sync"])
        primary.port = try Self.started(primary, data: "primary", options: "-c wal_level=replica -c max_wal_senders=4")
        self.primary = primary
        primaryURL = "postgresql://postgres@127.0.0.1:\(primary.port)/receiptd?connect_timeout=5"
        let admin = try PostgresConnection(url: "postgresql://postgres@127.0.0.1:\(primary.port)/postgres")
        try admin.execute("CREATE DATABASE receiptd")
        let database = try Database(postgresURL: primaryURL)
        let migrations = Migration.directory(for: .postgresql, under: migrationsDirectory)
        _ = try Migrator(migrations: try Migration.load(from: migrations)).migrate(database)
        try PostgresTestServer.run(
            primary, "pg_basebackup",
            [
                "-D", "\(directory)/replica", "-R", "-X", "stream", "--no-sync", "--checkpoint=fast", "-h", "127.0.0.1", "-p",
                "\(primary.port)", "-U", "postgres",
            ])
        var replica = primary
        replica.port = try Self.started(primary, data: "replica", options: Self.replicaOptions, avoiding: [primary.port])
        self.replica = replica
        replicaURL = "postgresql://postgres@127.0.0.1:\(replica.port)/receiptd?connect_timeout=5"
    }

    deinit { stop() }

    private static let replicaOptions = "-c hot_standby=on"

    /// Starts the server of `data` on a free port (``PostgresTestServer/onAFreePort(avoiding:log:_:)``); returns it.
    private static func started(
        _ server: PostgresTestServer.Running, data: String, options: String, avoiding taken: Set<Int> = []
    ) throws -> Int {
        try PostgresTestServer.onAFreePort(avoiding: taken, log: "\(server.directory)/\(data).log") {
            port throws(PostgresTestServer.SetupError) in
            var server = server
            server.port = port
            try start(server, data: data, options: options)
        }
    }

    private static func start(_ server: PostgresTestServer.Running, data: String, options: String)
        throws(PostgresTestServer.SetupError)
    {
        try PostgresTestServer.run(
            server, "pg_ctl",
            [
                "-D", "\(server.directory)/\(data)", "-l", "\(server.directory)/\(data).log", "-w", "-o",
                "-p \(server.port) -k \(server.directory) -c listen_addresses=127.0.0.1 -c fsync=off " + options, "start",
            ])
    }

    /// Starts the replica again (after ``killReplica()``), on its port: it catches up with the
    /// primary from where it stopped.
    package func startReplica() throws { try Self.start(replica, data: "replica", options: Self.replicaOptions) }

    /// Kills the replica (`pg_ctl stop -m immediate`: its processes go without a shutdown).
    package func killReplica() throws {
        try PostgresTestServer.run(replica, "pg_ctl", ["-D", "\(replica.directory)/replica", "-m", "immediate", "-w", "stop"])
    }

    /// Stops both and removes their files.
    package func stop() {
        for data in ["replica", "primary"] {
            try? PostgresTestServer.run(
                primary, "pg_ctl", ["-D", "\(primary.directory)/\(data)", "-m", "immediate", "-w", "stop"])
        }
        try? FileManager.default.removeItem(atPath: primary.directory)
    }
}
