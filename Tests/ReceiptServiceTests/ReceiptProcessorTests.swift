import AppStore
import Foundation
import HTTPServer
import Logging
import Storage
import Testing

@testable import ReceiptService

/// receiptd with the in-process App Store simulator, a scratch database and test keys.
private func withService(
    policy: String = "transfer", bundleIDs: [String] = ["com.example.app"], _ body: (Int, String) async throws -> Void
)
    async throws
{
    let dir = NSTemporaryDirectory() + "receiptd-api-" + UUID().uuidString
    try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: dir) }
    var appStore = ServiceConfiguration.AppStoreSettings.simulated
    appStore.bundleIDs = bundleIDs
    let migrations =
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path + "/Migrations"
    let configuration = ServiceConfiguration(
        environment: "test", http: HTTPServerConfiguration(host: "127.0.0.1", port: 0, eventLoops: 1, accessLog: false),
        database: .init(path: dir + "/db.sqlite", busyTimeout: .seconds(1), migrationsDirectory: migrations), logLevel: .critical,
        appStore: appStore, api: .init(publicKeys: ["pk"], secretKeys: ["sk"], ownershipPolicy: policy),
        entitlements: ["premium": ["monthly", "yearly", "lifetime"]])
    var logger = Logger(label: "test")
    logger.logLevel = .critical
    let app = try Application(configuration: configuration, logger: logger)
    let port = try app.start()
    try await body(port, dir + "/db.sqlite")
    app.server.shutdown()
    await app.server.waitUntilStopped()
}

private func post(_ port: Int, _ json: String, key: String? = "pk", contentType: String = "application/json") async throws
    -> (status: Int, body: [String: Any])
{
    let auth = key.map { "Authorization: Bearer \($0)\r\n" } ?? ""
    let r = try await send(
        port,
        "POST /v1/receipts HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\(auth)Content-Type: \(contentType)\r\n"
            + "Content-Length: \(json.utf8.count)\r\n\r\n\(json)")
    return (r.status, (try? JSONSerialization.jsonObject(with: Data(r.body.utf8)) as? [String: Any]) ?? [:])
}

private func subscriber(_ port: Int, _ user: String, key: String = "sk") async throws -> (status: Int, body: [String: Any]) {
    let r = try await send(
        port, "GET /v1/subscribers/\(user) HTTP/1.1\r\nHost: t\r\nConnection: close\r\nAuthorization: Bearer \(key)\r\n\r\n")
    return (r.status, (try? JSONSerialization.jsonObject(with: Data(r.body.utf8)) as? [String: Any]) ?? [:])
}

private func receipt(_ content: String) -> String { Data(content.utf8).base64EncodedString() }

private func body(user: String, _ content: String, extra: String = "") -> String {
    #"{"app_user_id":"\#(user)","receipt_data":"\#(receipt(content))"\#(extra)}"#
}

/// Every row of the receipt tables, to show a refused request changed nothing.
private func snapshot(_ path: String) throws -> [String] {
    let db = try Database(path: path)
    var rows: [String] = []
    for table in ["subscribers", "transactions", "pending_renewal_info", "latest_receipts", "ownership", "ownership_transfers"] {
        let s = try db.prepare("SELECT * FROM \(table) ORDER BY 1")
        while try s.step() { rows.append(table + ":" + (0..<24).map { s.text($0) ?? "∅" }.joined(separator: "|")) }
    }
    return rows
}

private func entitlement(_ document: [String: Any], _ name: String) -> [String: Any]? {
    (document["entitlements"] as? [String: Any])?[name] as? [String: Any]
}

@Suite("Receipts API", .serialized)
struct ReceiptProcessorTests {
    @Test func postThenGetGivesTheDocumentedStates() async throws {
        try await withService { port, _ in
            let cases: [(String, String, Bool)] = [
                ("active_monthly", "active", true), ("grace_period", "grace_period", true),
                ("billing_retry", "billing_retry", false),
                ("expired_voluntary", "expired", false), ("refunded", "refunded", false), ("trial", "active", true),
            ]
            for (scenario, state, active) in cases {
                let r = try await post(port, body(user: "u-\(scenario)", scenario + ":" + scenario))
                #expect(r.status == 200, "\(scenario): \(r.body)")
                let premium = entitlement(r.body, "premium")
                #expect(premium?["state"] as? String == state, "\(scenario)")
                #expect(premium?["active"] as? Bool == active, "\(scenario)")
                let stored = try await subscriber(port, "u-\(scenario)")
                #expect(stored.status == 200)
                #expect(entitlement(stored.body, "premium")?["state"] as? String == state)
            }
            let upgraded = try await post(port, body(user: "u-up", "upgraded:up"))
            #expect(entitlement(upgraded.body, "premium")?["product_id"] as? String == "yearly")
            #expect(
                ((upgraded.body["subscriptions"] as? [String: Any])?["monthly"] as? [String: Any])?["state"] as? String
                    == "upgraded")
            let lifetime = try await post(port, body(user: "u-life", "non_consumable:life"))
            #expect(entitlement(lifetime.body, "premium")?["active"] as? Bool == true)
            #expect(((lifetime.body["non_subscriptions"] as? [String: Any])?["lifetime"] as? [Any])?.count == 1)
            let sandbox = try await post(port, body(user: "u-sb", "sandbox_only:sb"))
            #expect(entitlement(sandbox.body, "premium")?["environment"] as? String == "sandbox")
        }
    }

    @Test func repostingChangesNothing() async throws {
        try await withService { port, db in
            let first = try await post(port, body(user: "alice", "active_monthly:a"))
            let before = try snapshot(db)
            let second = try await post(port, body(user: "alice", "active_monthly:a"))
            #expect(try snapshot(db) == before)
            #expect(first.status == 200 && second.status == 200)
            #expect(
                NSDictionary(dictionary: first.body["subscriptions"] as? [String: Any] ?? [:])
                    .isEqual(to: second.body["subscriptions"] as? [String: Any] ?? [:]))
        }
    }

    @Test func transferMovesThePurchaseToTheNewestPoster() async throws {
        try await withService(policy: "transfer") { port, _ in
            _ = try await post(port, body(user: "alice", "active_monthly:shared"))
            let bob = try await post(port, body(user: "bob", "active_monthly:shared"))
            #expect(bob.status == 200)
            #expect(entitlement(bob.body, "premium")?["active"] as? Bool == true)
            let alice = try await subscriber(port, "alice")
            #expect(entitlement(alice.body, "premium") == nil)
        }
    }

    @Test func keepRefusesASecondUserWith409() async throws {
        try await withService(policy: "keep") { port, db in
            _ = try await post(port, body(user: "alice", "active_monthly:shared"))
            let before = try snapshot(db)
            let bob = try await post(port, body(user: "bob", "active_monthly:shared"))
            #expect(bob.status == 409)
            #expect((bob.body["error"] as? [String: Any])?["code"] as? String == "receipt_in_use")
            #expect(try snapshot(db) == before)
            #expect(try await subscriber(port, "bob").status == 404)
        }
    }

    @Test func badInputGetsItsErrorAndChangesNothing() async throws {
        try await withService { port, db in
            _ = try await post(port, body(user: "alice", "active_monthly:a"))
            let before = try snapshot(db)
            let cases: [(String, String?, Int, String)] = [
                ("not json", "pk", 400, "invalid_request"),
                (#"{"receipt_data":"QQ=="}"#, "pk", 400, "invalid_request"),
                (#"{"app_user_id":"","receipt_data":"QQ=="}"#, "pk", 400, "invalid_request"),
                (#"{"app_user_id":"alice","receipt_data":""}"#, "pk", 400, "invalid_request"),
                (#"{"app_user_id":"alice","receipt_data":"%%%"}"#, "pk", 400, "invalid_request"),
                (
                    #"{"app_user_id":"alice","receipt_data":"QQ==","exclude_old_transactions":"yes"}"#, "pk", 400,
                    "invalid_request"
                ),
                (body(user: "alice", "active_monthly:a", extra: #","bundle_id":"com.other""#), "pk", 422, "bundle_mismatch"),
                (body(user: "alice", "status_21003"), "pk", 422, "invalid_receipt"),
                (body(user: "alice", "status_21002"), "pk", 503, "app_store_unavailable"),
                (body(user: "alice", "active_monthly:a"), nil, 401, "unauthorized"),
                (body(user: "alice", "active_monthly:a"), "nope", 401, "unauthorized"),
                (String(repeating: "x", count: 2 << 20), "pk", 413, "payload_too_large"),
            ]
            for (json, key, status, code) in cases {
                let r = try await post(port, json, key: key)
                #expect(r.status == status, "\(json.prefix(80)) → \(r.body)")
                #expect((r.body["error"] as? [String: Any])?["code"] as? String == code, "\(json.prefix(80))")
            }
            #expect(try snapshot(db) == before)
            // Only the requests that reached Apple are in the verification log: 1 + 21003 + 21002.
            #expect(try Database(path: db).scalarInt("SELECT count(*) FROM verifications") == 3)
            #expect(try await subscriber(port, "alice", key: "pk").status == 403)
            #expect(try await subscriber(port, "nobody").status == 404)
        }
    }

    @Test func aReceiptForAnotherAppIsABundleMismatch() async throws {
        // The simulator signs receipts for the first configured app; configure only another one.
        try await withService(bundleIDs: ["com.example.app", "com.example.other"]) { port, _ in
            let r = try await post(port, body(user: "alice", "active_monthly:a", extra: #","bundle_id":"com.example.other""#))
            #expect(r.status == 422)
            #expect((r.body["error"] as? [String: Any])?["code"] as? String == "bundle_mismatch")
            let missing = try await post(port, body(user: "alice", "active_monthly:a"))
            #expect(missing.status == 400)
        }
    }
}

@Suite("Subscriber document")
struct SubscriberDocumentTests {
    @Test(arguments: [
        (Int64(0), "1970-01-01T00:00:00.000Z"), (1_611_147_600_000, "2021-01-20T13:00:00.000Z"),
        (951_782_400_123, "2000-02-29T00:00:00.123Z"), (4_102_444_799_999, "2099-12-31T23:59:59.999Z"),
        (-1, "1969-12-31T23:59:59.999Z"),
    ])
    func timesAreRFC3339UTC(ms: Int64, text: String) {
        #expect(SubscriberDocument.time(ms) == .string(text))
        #expect(SubscriberDocument.time(nil) == .null)
    }
}
