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

/// The secrets the test services are configured with: distinctive, so any leak is found.
enum TestSecrets {
    static let publicKey = "pk_test_4f1c9a7e2b"
    static let secretKey = "sk_test_91d0e3b58a"
    static let sharedSecret = "ss_test_7c2e5a90f3"
    static let all = [publicKey, secretKey, sharedSecret]
}

/// Every log line of every test service and every response the tests receive (through `send`),
/// scanned for ``TestSecrets`` as it is produced; each service checks on stop that none was found.
final class SecretAudit: Sendable {
    static let shared = SecretAudit(secrets: TestSecrets.all)
    let secrets: [String]
    private let state = Mutex<(scanned: Int, leaks: [String])>((0, []))

    init(secrets: [String]) { self.secrets = secrets }

    func scan(_ text: String, from source: String) {
        let found = secrets.filter { text.contains($0) }
        state.withLock { s in
            s.scanned += 1
            if !found.isEmpty { s.leaks.append("\(source): \(text.prefix(300))") }
        }
    }

    var scanned: Int { state.withLock { $0.scanned } }
    var leaks: [String] { state.withLock { $0.leaks } }
}

/// Logs everything (trace and up) into the audit, printing nothing.
struct AuditingLogHandler: LogHandler {
    let audit: SecretAudit
    var metadata: Logger.Metadata = [:]
    var metadataProvider: Logger.MetadataProvider?
    var logLevel: Logger.Level = .trace

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let all = metadata.merging(event.metadata ?? [:]) { $1 }
        audit.scan("\(event.level) \(event.message) \(all) \(event.error.map { "\($0)" } ?? "")", from: "log")
    }
}

extension ServiceConfiguration.AppStoreSettings {
    /// The built-in simulator, one app, quick retries: for tests.
    static let simulated = ServiceConfiguration.AppStoreSettings(
        productionURL: "http://127.0.0.1:1/unused", sandboxURL: "http://127.0.0.1:1/unused", simulator: true, allowHTTP: true,
        bundleIDs: ["com.example.app"], sharedSecret: TestSecrets.sharedSecret, connectTimeout: .seconds(2),
        maxResponseBytes: 1 << 20,
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
        appStore: appStore,
        api: .init(publicKeys: [TestSecrets.publicKey], secretKeys: [TestSecrets.secretKey], ownershipPolicy: policy),
        entitlements: entitlements)
    configuration.limits = limits
    configuration.refresher = refresher
    return configuration
}

/// The test services' logger: every line goes to ``SecretAudit``, none is printed.
var quietLogger: Logger {
    Logger(label: "test") { _ in AuditingLogHandler(audit: .shared) }
}

/// Fails the running test when any log line or response so far held a configured secret.
func expectNoSecretLeaked() {
    let leaks = SecretAudit.shared.leaks
    #expect(leaks.isEmpty, "secrets in logs or responses: \(leaks.prefix(5))")
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
    expectNoSecretLeaked()
}

/// receiptd on a test clock, with the application itself (for its cache) and the database path.
func withClockedService(
    _ body: (Application, Int, String, TestClock) async throws -> Void
) async throws {
    let dir = NSTemporaryDirectory() + "receiptd-clocked-" + UUID().uuidString
    try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let clock = TestClock()
    let app = try Application(
        configuration: testConfiguration(path: dir + "/db.sqlite"), logger: quietLogger, now: clock.closure)
    let port = try app.start()
    try await body(app, port, dir + "/db.sqlite", clock)
    await app.stop()
    expectNoSecretLeaked()
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
                    SecretAudit.shared.scan(text, from: "response to \(raw.prefix(while: { $0 != "\r" }))")
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

    private var logger: Logger { quietLogger }

    @Test func theSecretAuditFindsASecretInAnyPartOfALogLine() {
        let audit = SecretAudit(secrets: ["hunter2"])
        var logger = Logger(label: "audit") { _ in AuditingLogHandler(audit: audit) }
        logger.info("fine")
        logger.debug("still fine", metadata: ["key": "value"])
        #expect(audit.leaks.isEmpty && audit.scanned == 2)
        logger[metadataKey: "password"] = "hunter2"
        logger.trace("oops")
        logger.error("oops", metadata: ["nested": ["a": "xhunter2x"]])
        #expect(audit.leaks.count == 2)
    }

    @Test func noConfiguredSecretReachesALogLineOrAResponse() async throws {
        let scannedBefore = SecretAudit.shared.scanned
        try await withService { port, _ in
            func post(_ path: String, _ body: String, key: String?) async throws -> Int {
                let auth = key.map { "Authorization: Bearer \($0)\r\n" } ?? ""
                return try await send(
                    port,
                    "POST \(path) HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\(auth)Content-Type: application/json\r\n"
                        + "Content-Length: \(body.utf8.count)\r\n\r\n\(body)"
                ).status
            }
            let receipt = Data("active_monthly:audit".utf8).base64EncodedString()
            let good = #"{"app_user_id":"audit","receipt_data":"\#(receipt)"}"#
            // The paths that handle secrets: keys right, wrong and misplaced; the shared secret sent
            // to Apple; V1 notifications with the right and a wrong password; 21004 from Apple.
            #expect(try await post("/v1/receipts", good, key: TestSecrets.publicKey) == 200)
            #expect(try await post("/v1/receipts", good, key: TestSecrets.publicKey + "x") == 401)
            #expect(try await post("/v1/receipts", good, key: nil) == 401)
            #expect(try await get(port, "/v1/subscribers/audit").status == 401)
            let v1 = { (password: String) in
                #"{"notification_type":"DID_RENEW","password":"\#(password)","bid":"com.example.app","environment":"PROD","#
                    + #""unified_receipt":{"status":0,"environment":"Production","latest_receipt_info":[]}}"#
            }
            #expect(try await post("/v1/notifications/apple", v1(TestSecrets.sharedSecret), key: nil) == 200)
            #expect(try await post("/v1/notifications/apple", v1(TestSecrets.secretKey), key: nil) == 401)
            let listed = try await send(
                port,
                "GET /v1/notifications HTTP/1.1\r\nHost: t\r\nConnection: close\r\n"
                    + "Authorization: Bearer \(TestSecrets.secretKey)\r\n\r\n")
            #expect(listed.status == 200)
        }
        // Trace-level logging was on, and every response above was scanned.
        #expect(SecretAudit.shared.scanned - scannedBefore >= 10)
        expectNoSecretLeaked()
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

/// Issue 16: RFC 9112 §3.2.2 — a server accepts absolute-form targets; the host part is ignored.
@Suite struct AbsoluteFormTests {
    @Test func absoluteFormTargetsAreServedOverTheWire() async throws {
        try await withService { port, _ in
            let health = try await send(port, "GET http://host/healthz HTTP/1.1\r\nHost: host\r\nConnection: close\r\n\r\n")
            #expect(health.status == 200, "\(health.head)")
            let other = try await send(
                port,
                "GET https://elsewhere.example:443/v1/subscribers/nobody HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                    + "Authorization: Bearer \(TestSecrets.secretKey)\r\n\r\n")
            #expect(other.status == 404 && other.body.contains("not_found"), "\(other.body)")
        }
    }
}
