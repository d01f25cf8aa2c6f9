import AppStore
import DatabaseEngine
import Foundation
import HTTPServer
import Logging
import Operations
import ReceiptTesting
import Storage
import Synchronization
import Testing

@testable import ReceiptCore
@testable import ReceiptService

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
            let receipt = simulatedReceipt("active_monthly:audit")
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
        let app = try await TestApp.open(
            configuration(database: dir + "/db.sqlite", migrations: migrationsDirectory), logger: logger)
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
            let app = try await TestApp.open(config, logger: logger)
            let applied = try await app.database.run { db in try db.scalarInt("SELECT count(*) FROM schema_migrations") }
            #expect(applied == 1)
        }
        try "CREATE TABLE a (x TEXT);".write(toFile: migrations + "/0001_a.sql", atomically: true, encoding: .utf8)
        await #expect(throws: StorageError.self) { try await TestApp.open(config, logger: logger) }
    }

    @Test func readinessReportsPendingMigrations() async throws {
        let (dir, migrations) = try scratchWithMigration("CREATE TABLE a (x INTEGER);")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let app = try await TestApp.open(configuration(database: dir + "/db.sqlite", migrations: migrations), logger: logger)
        let port = try app.start()
        // A migration that arrived after start-up (e.g. a half-finished deploy) is not applied yet.
        let later = Migrator(migrations: app.migrator.migrations + [Migration(version: 2, name: "0002_b", sql: "SELECT 1;")])
        let response = OperationsRoutes.readiness(await CheckReadiness(database: app.database, migrator: later)())
        #expect(response.status.code == 503)
        #expect(String(decoding: response.body, as: UTF8.self).contains(#""migrations_pending":1"#))
        #expect(try await get(port, "/readyz").status == 200)
        await app.stop()
    }
}

/// RFC 9112 §3.2.2 — a server accepts absolute-form targets; the host part is ignored.
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
