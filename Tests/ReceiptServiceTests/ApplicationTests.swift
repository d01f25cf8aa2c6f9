import AppStore
import Foundation
import HTTPServer
import Logging
import Storage
import Synchronization
import Testing

@testable import ReceiptService

/// Fetches `path` from a local port with a single HTTP/1.1 request (off the cooperative pool).
func get(_ port: Int, _ path: String) async throws -> (status: Int, body: String) {
    let r = try await send(port, "GET \(path) HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
    return (r.status, r.body)
}

extension ServiceConfiguration.AppStoreSettings {
    /// The built-in simulator, one app, quick retries: for tests.
    static let simulated = ServiceConfiguration.AppStoreSettings(
        productionURL: "http://127.0.0.1:1/unused", sandboxURL: "http://127.0.0.1:1/unused", simulator: true, allowHTTP: true,
        bundleIDs: ["com.example.app"], sharedSecret: "s3cret", connectTimeout: .seconds(2), maxResponseBytes: 1 << 20,
        maxRetries: 2, attemptTimeout: .seconds(2), deadline: .seconds(5))
}

/// A settable clock (epoch ms) for the service and its simulator.
final class TestClock: Sendable {
    private let value: Mutex<Int64>
    init(_ start: Int64 = 1_790_000_000_000) { value = Mutex(start) }
    var now: Int64 { value.withLock { $0 } }
    func advance(by ms: Int64) { value.withLock { $0 += ms } }
    var closure: @Sendable () -> Int64 { { [self] in now } }
}

/// The test service's configuration: the in-process simulator, a database at `path`, test keys
/// (`pk` public, `sk` secret).
func testConfiguration(
    path: String, policy: String = "transfer", bundleIDs: [String] = ["com.example.app"],
    entitlements: [String: [String]] = ["premium": ["monthly", "yearly", "premium_monthly", "lifetime"]],
    signedData: ServiceConfiguration.SignedDataSettings = .init(), breaker: CircuitBreaker.Policy = .init(),
    limits: RateLimiter.Settings = .init(), refresher: Refresher.Settings = .init()
) -> ServiceConfiguration {
    var appStore = ServiceConfiguration.AppStoreSettings.simulated
    appStore.bundleIDs = bundleIDs
    appStore.signedData = signedData
    appStore.breaker = breaker
    let migrations =
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path + "/Migrations"
    var configuration = ServiceConfiguration(
        environment: "test", http: HTTPServerConfiguration(host: "127.0.0.1", port: 0, eventLoops: 1, accessLog: false),
        database: .init(path: path, busyTimeout: .seconds(1), migrationsDirectory: migrations), logLevel: .critical,
        appStore: appStore, api: .init(publicKeys: ["pk"], secretKeys: ["sk"], ownershipPolicy: policy),
        entitlements: entitlements)
    configuration.limits = limits
    configuration.refresher = refresher
    return configuration
}

var quietLogger: Logger {
    var logger = Logger(label: "test")
    logger.logLevel = .critical
    return logger
}

/// receiptd with the in-process simulator, a scratch database and test keys (`pk` public, `sk`
/// secret); `body` gets the port and the database path.
func withService(
    policy: String = "transfer", bundleIDs: [String] = ["com.example.app"],
    entitlements: [String: [String]] = ["premium": ["monthly", "yearly", "premium_monthly", "lifetime"]],
    signedData: ServiceConfiguration.SignedDataSettings = .init(), breaker: CircuitBreaker.Policy = .init(),
    limits: RateLimiter.Settings = .init(), _ body: (Int, String) async throws -> Void
) async throws {
    let dir = NSTemporaryDirectory() + "receiptd-api-" + UUID().uuidString
    try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let configuration = testConfiguration(
        path: dir + "/db.sqlite", policy: policy, bundleIDs: bundleIDs, entitlements: entitlements, signedData: signedData,
        breaker: breaker, limits: limits)
    let app = try Application(configuration: configuration, logger: quietLogger)
    let port = try app.start()
    try await body(port, dir + "/db.sqlite")
    await app.stop()
}

/// Every row of every table the API writes, as text: a refused request or a duplicate must leave
/// it unchanged.
func tableSnapshot(_ path: String) throws -> [String] {
    let db = try Database(path: path)
    var rows: [String] = []
    for table in [
        "subscribers", "transactions", "pending_renewal_info", "renewal_history", "latest_receipts", "ownership",
        "ownership_transfers", "events", "notifications",
    ] {
        let s = try db.prepare("SELECT * FROM \(table) ORDER BY 1")
        while try s.step() { rows.append(table + ":" + (0..<24).map { s.text($0) ?? "∅" }.joined(separator: "|")) }
    }
    return rows
}

/// Sends `raw` (one HTTP/1.1 request that asks to close) and returns status and body.
func send(_ port: Int, _ raw: String) async throws -> (status: Int, body: String, head: String) {
    try await withCheckedThrowingContinuation { continuation in
        // A thread of its own, never Dispatch's global queues: on Linux, Swift concurrency's
        // executor shares their threads, and one blocked in recv starves the server's handlers.
        Thread {
            continuation.resume(
                with: Result {
                    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
                    defer { close(fd) }
                    var address = sockaddr_in()
                    address.sin_family = sa_family_t(AF_INET)
                    address.sin_port = in_port_t(UInt16(port).bigEndian)
                    address.sin_addr.s_addr = inet_addr("127.0.0.1")
                    let rc = withUnsafePointer(to: &address) {
                        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                            connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                        }
                    }
                    guard rc == 0 else { throw CocoaError(.fileReadUnknown) }
                    let request = Array(raw.utf8)
                    _ = request.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) }
                    var data: [UInt8] = []
                    var chunk = [UInt8](repeating: 0, count: 4096)
                    while true {
                        let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                        if n <= 0 { break }
                        data += chunk[0..<n]
                    }
                    let text = String(decoding: data, as: UTF8.self)
                    let status = Int(text.split(separator: " ")[1]) ?? 0
                    let parts = text.components(separatedBy: "\r\n\r\n")
                    return (status, parts.dropFirst().joined(separator: "\r\n\r\n"), parts[0])
                })
        }.start()
    }
}

@Suite("Application")
struct ApplicationTests {
    private func configuration(database: String, migrations: String) -> ServiceConfiguration {
        ServiceConfiguration(
            environment: "test",
            http: HTTPServerConfiguration(host: "127.0.0.1", port: 0, eventLoops: 1, accessLog: false),
            database: .init(path: database, busyTimeout: .seconds(1), migrationsDirectory: migrations),
            logLevel: .warning, appStore: .simulated, api: .init(publicKeys: [], secretKeys: [], ownershipPolicy: "transfer"),
            entitlements: [:])
    }

    private var migrationsDirectory: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().path + "/Migrations"
    }

    /// A scratch folder holding `Migrations/0001_a.sql` with `sql`; returns (folder, migrations).
    private func scratchWithMigration(_ sql: String) throws -> (String, String) {
        let dir = NSTemporaryDirectory() + "receiptd-app-" + UUID().uuidString
        let migrations = dir + "/Migrations"
        try FileManager.default.createDirectory(atPath: migrations, withIntermediateDirectories: true)
        try sql.write(toFile: migrations + "/0001_a.sql", atomically: true, encoding: .utf8)
        return (dir, migrations)
    }

    private var logger: Logger {
        var l = Logger(label: "test")
        l.logLevel = .warning
        return l
    }

    @Test func healthAndReadinessAnswer() async throws {
        let dir = NSTemporaryDirectory() + "receiptd-app-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let app = try Application(
            configuration: configuration(database: dir + "/db.sqlite", migrations: migrationsDirectory), logger: logger)
        let port = try app.start()
        let health = try await get(port, "/healthz")
        #expect(health.status == 200)
        #expect(health.body == #"{"status":"ok"}"#)
        let ready = try await get(port, "/readyz")
        #expect(ready.status == 200)
        #expect(ready.body.contains(#""status":"ready""#))
        #expect(ready.body.contains(#""migrations_pending":0"#))
        await app.stop()
    }

    @Test func startupMigratesAndRefusesAnEditedMigration() async throws {
        let (dir, migrations) = try scratchWithMigration("CREATE TABLE a (x INTEGER);")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let config = configuration(database: dir + "/db.sqlite", migrations: migrations)
        do {
            let app = try Application(configuration: config, logger: logger)
            let applied = try await app.database.run { db in try db.scalarInt("SELECT count(*) FROM schema_migrations") }
            #expect(applied == 1)
        }
        try "CREATE TABLE a (x TEXT);".write(toFile: migrations + "/0001_a.sql", atomically: true, encoding: .utf8)
        #expect(throws: StorageError.self) { try Application(configuration: config, logger: logger) }
    }

    @Test func readinessReportsPendingMigrations() async throws {
        let (dir, migrations) = try scratchWithMigration("CREATE TABLE a (x INTEGER);")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let app = try Application(
            configuration: configuration(database: dir + "/db.sqlite", migrations: migrations), logger: logger)
        let port = try app.start()
        // A migration that arrived after start-up (e.g. a half-finished deploy) is not applied yet.
        let response = await Routes.readiness(
            database: app.database,
            migrator: Migrator(migrations: app.migrator.migrations + [Migration(version: 2, name: "0002_b", sql: "SELECT 1;")]))
        #expect(response.status.code == 503)
        #expect(String(decoding: response.body, as: UTF8.self).contains(#""migrations_pending":1"#))
        #expect(try await get(port, "/readyz").status == 200)
        await app.stop()
    }
}
