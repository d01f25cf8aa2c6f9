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
        primary = .init(directory: directory, port: PostgresTestServer.freePort(), binaries: binaries, asPostgres: asPostgres)
        replica = .init(directory: directory, port: PostgresTestServer.freePort(), binaries: binaries, asPostgres: asPostgres)
        primaryURL = "postgresql://postgres@127.0.0.1:\(primary.port)/receiptd?connect_timeout=5"
        replicaURL = "postgresql://postgres@127.0.0.1:\(replica.port)/receiptd?connect_timeout=5"
        try PostgresTestServer.run(
            primary, "initdb",
            ["-D", "\(directory)/primary", "-A", "trust", "-U", "postgres", "-E", "UTF8", "--locale=C", "--no-sync"])
        try start(primary, data: "primary", options: "-c wal_level=replica -c max_wal_senders=4")
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
        try startReplica()
    }

    deinit { stop() }

    private func start(_ server: PostgresTestServer.Running, data: String, options: String) throws {
        try PostgresTestServer.run(
            server, "pg_ctl",
            [
                "-D", "\(server.directory)/\(data)", "-l", "\(server.directory)/\(data).log", "-w", "-o",
                "-p \(server.port) -k \(server.directory) -c listen_addresses=127.0.0.1 -c fsync=off " + options, "start",
            ])
    }

    /// Starts the replica (again): it catches up with the primary from where it stopped.
    package func startReplica() throws { try start(replica, data: "replica", options: "-c hot_standby=on") }

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
