import DatabaseEngine
import Foundation
import Storage
import Synchronization

/// A throwaway PostgreSQL cluster on loopback for the tests: Debian's `postgresql`, started once
/// per test process (as the `postgres` user when the tests run as root: PostgreSQL refuses root),
/// with fsync off (a test's data need not survive a power cut), and stopped when the process exits.
/// Each test takes a database of its own from ``freshDatabase()``.
///
/// Where PostgreSQL is not installed the tests that need it are disabled, and the reason is
/// printed once: ``unavailableReason()``.
package enum PostgresTestServer {
    struct Running: Sendable {
        var directory: String
        var port: Int
        var binaries: String
        var asPostgres: Bool
    }

    private typealias Waiter = CheckedContinuation<Result<Running, SetupError>, Never>

    /// Nothing asked yet; starting, with who waits; or how the start ended.
    private enum State {
        case idle
        case starting([Waiter])
        case done(Result<Running, SetupError>)
    }

    private static let state = Mutex<State>(.idle)
    private static let databases = Atomic<Int>(0)

    package struct SetupError: Error, CustomStringConvertible, Sendable {
        package var description: String
    }

    /// Why the PostgreSQL tests cannot run here, or nil when they can (starts the server).
    package static func unavailableReason() async -> String? {
        guard case .failure(let error) = await server() else { return nil }
        return error.description
    }

    /// Whether the PostgreSQL tests can run here (for `.enabled { await … }`).
    package static func isAvailable() async -> Bool { await unavailableReason() == nil }

    /// The URL of a new database on the test server: empty, or with the repository's PostgreSQL
    /// migrations applied (a copy of a template migrated once at the start, which takes a few
    /// milliseconds where migrating takes a few hundred).
    package static func freshDatabase(migrated: Bool = false) async throws -> String {
        let running = try await server().get()
        let name = "t\(getpid())_\(databases.add(1, ordering: .relaxed).newValue)"
        try await onItsOwnThread {
            let admin = try PostgresConnection(url: url(running, database: "postgres"))
            try admin.execute("CREATE DATABASE \(name)" + (migrated ? " TEMPLATE \(migratedTemplate)" : ""))
        }
        return url(running, database: name)
    }

    /// Drops a database ``freshDatabase(migrated:)`` made, ending whatever is still connected to
    /// it (a stopped service's pools, a test's own connections): the server's connections are
    /// finite (`max_connections`), and a suite of services that each left theirs open used them up.
    package static func drop(_ databaseURL: String) async {
        guard case .success(let running) = await server(),
            let name = databaseURL.split(separator: "/").last?.split(separator: "?").first.map(String.init),
            name.hasPrefix("t\(getpid())_")
        else { return }
        try? await onItsOwnThread {
            let admin = try PostgresConnection(url: url(running, database: "postgres"))
            try admin.execute("DROP DATABASE IF EXISTS \(name) WITH (FORCE)")
        }
    }

    /// The database every migrated one is copied from (no one stays connected to it: PostgreSQL
    /// copies only a template nobody uses).
    private static let migratedTemplate = "migrated_template"

    private static func url(_ running: Running, database: String) -> String {
        "postgresql://postgres@127.0.0.1:\(running.port)/\(database)?connect_timeout=5"
    }

    /// Starts the server once, on a thread of its own: initdb and pg_ctl take seconds, and a
    /// caller blocked on them (or on a lock around them) holds one of the few threads Swift
    /// concurrency has. Two such holders stalled every test for seconds, and HTTP tests waiting
    /// on a handler timed out.
    private static func server() async -> Result<Running, SetupError> {
        await withCheckedContinuation { continuation in
            let startsIt = state.withLock { state -> Bool in
                switch state {
                case .done(let result):
                    continuation.resume(returning: result)
                    return false
                case .starting(let waiting):
                    state = .starting(waiting + [continuation])
                    return false
                case .idle:
                    state = .starting([continuation])
                    return true
                }
            }
            guard startsIt else { return }
            Thread {
                let result = Result { () throws(SetupError) -> Running in try start() }
                if case .failure(let error) = result { print("PostgreSQL tests skipped: \(error)") }  // once
                if case .success = result { atexit { PostgresTestServer.stop() } }
                let waiting = state.withLock { state -> [Waiter] in
                    guard case .starting(let waiting) = state else { return [] }
                    state = .done(result)
                    return waiting
                }
                for waiter in waiting { waiter.resume(returning: result) }
            }.start()
        }
    }

    private static func start() throws(SetupError) -> Running {
        let binaries = try binaries()
        let asPostgres = getuid() == 0
        sweepAbandoned(binaries: binaries, asPostgres: asPostgres)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("receiptd-pg-\(getpid())").path
        try? FileManager.default.removeItem(atPath: directory)
        do {
            try FileManager.default.createDirectory(
                atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o777])
        } catch {
            throw SetupError(description: "cannot create \(directory): \(error)")
        }
        var running = Running(directory: directory, port: 0, binaries: binaries, asPostgres: asPostgres)
        try run(
            running, "initdb",
            ["-D", "\(directory)/data", "-A", "trust", "-U", "postgres", "-E", "UTF8", "--locale=C", "--no-sync"])
        running.port = try onAFreePort(log: "\(directory)/log") { port throws(SetupError) in
            try run(
                running, "pg_ctl",
                [
                    "-D", "\(directory)/data", "-l", "\(directory)/log", "-w", "-o",
                    "-p \(port) -k \(directory) -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off"
                        + " -c full_page_writes=off -c max_connections=600",
                    "start",
                ])
        }
        do {
            let admin = try PostgresConnection(url: url(running, database: "postgres"))
            try admin.execute("CREATE DATABASE \(migratedTemplate)")
            let template = try Database(postgresURL: url(running, database: migratedTemplate))
            let directory = Migration.directory(for: .postgresql, under: migrationsDirectory)
            _ = try Migrator(migrations: try Migration.load(from: directory)).migrate(template)
        } catch {
            throw SetupError(description: "cannot migrate the template database: \(error)")
        }
        return running
    }

    /// Clusters of test processes that died before their exit handler ran (a crash, a kill):
    /// each still running is stopped and its files deleted, so that a crashed run leaves no
    /// server behind past the next one. A directory names its process (`receiptd-pg-<pid>`,
    /// `receiptd-pg-pair-<pid>-<n>`); one whose process lives is left alone.
    static func sweepAbandoned(binaries: String, asPostgres: Bool) {
        let temporary = FileManager.default.temporaryDirectory.path
        for name in (try? FileManager.default.contentsOfDirectory(atPath: temporary)) ?? [] {
            guard name.hasPrefix("receiptd-pg-") else { continue }
            let parts = name.dropFirst("receiptd-pg-".count).split(separator: "-")
            guard let pid = Int32(parts.first == "pair" && parts.count > 1 ? parts[1] : parts.first ?? ""), pid > 0,
                pid != getpid(), kill(pid, 0) == -1, errno == ESRCH
            else { continue }
            let directory = temporary + "/" + name
            let dead = Running(directory: directory, port: 0, binaries: binaries, asPostgres: asPostgres)
            for data in ["data", "primary", "replica"]
            where FileManager.default.fileExists(atPath: "\(directory)/\(data)/postmaster.pid") {
                try? run(dead, "pg_ctl", ["-D", "\(directory)/\(data)", "-m", "immediate", "-w", "stop"])
            }
            try? FileManager.default.removeItem(atPath: directory)
        }
    }

    /// The newest installed PostgreSQL's programs.
    static func binaries() throws(SetupError) -> String {
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? []
        guard let version = versions.compactMap(Int.init).max() else {
            throw SetupError(description: "no PostgreSQL server under /usr/lib/postgresql (apt-get install -y postgresql)")
        }
        return "/usr/lib/postgresql/\(version)/bin"
    }

    /// Stops the server and deletes its files (at exit).
    static func stop() {
        guard case .done(.success(let running)) = state.withLock({ $0 }) else { return }
        try? run(running, "pg_ctl", ["-D", "\(running.directory)/data", "-m", "immediate", "-w", "stop"])
        try? FileManager.default.removeItem(atPath: running.directory)
    }

    /// Runs a PostgreSQL tool to its end (posix_spawn and waitpid: Foundation's Process can miss the
    /// exit of a child whose own child, the server, lives on). Output goes to a file beside the data.
    static func run(_ running: Running, _ tool: String, _ arguments: [String]) throws(SetupError) {
        let path = "\(running.binaries)/\(tool)"
        let argv = running.asPostgres ? ["/usr/sbin/runuser", "-u", "postgres", "--", path] + arguments : [path] + arguments
        let outputPath = "\(running.directory)/\(tool).out"
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        var cArguments = argv.map { strdup($0) } + [nil]
        defer { for argument in cArguments { free(argument) } }
        var pid = pid_t()
        let spawned = posix_spawn(&pid, argv[0], &actions, nil, &cArguments, environ)
        guard spawned == 0 else { throw SetupError(description: "cannot run \(argv[0]): errno \(spawned)") }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
        let exited = (status & 0x7f) == 0
        let code = (status >> 8) & 0xff
        guard exited && code == 0 else {
            let text = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
            throw SetupError(description: "\(tool) ended with status \(status): \(text.suffix(500))")
        }
    }

    /// The port `start` started a server on: one no one listens on, and another while the one
    /// chosen was taken before the server bound it (a connection of the tests running beside can
    /// take it as its own end), as the server's `log` says; up to five. Any other failure is
    /// thrown with the end of that log, which says why.
    static func onAFreePort(avoiding taken: Set<Int> = [], log: String, _ start: (Int) throws(SetupError) -> Void)
        throws(SetupError) -> Int
    {
        var tried = taken
        for attempt in 1...5 {
            var port = freePort()
            while tried.contains(port) { port = freePort() }
            tried.insert(port)
            try? FileManager.default.removeItem(atPath: log)
            do {
                try start(port)
                return port
            } catch {
                let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
                guard attempt < 5, text.contains("Address already in use") else {
                    throw SetupError(description: "\(error.description); its log: \(text.suffix(500))")
                }
            }
        }
        throw SetupError(description: "no free port in five tries")
    }

    /// A TCP port on 127.0.0.1 no one listens on now.
    static func freePort() -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(fd, pointer, length)
                return getsockname(fd, pointer, &length)
            }
        }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
