import DatabaseEngine
import Foundation
import JSON
import ReceiptCore
import ReceiptService
import ReceiptTesting
import Storage
import Testing
import WebhookSink
import Webhooks

private let secret = "whsec-test-0123456789abcdef"
private let oldSecret = "whsec-old-0123456789abcdef"

/// The test service with one endpoint, `crm`, at `url`: quick polls. The attempt timeout is the
/// hang guard (the sink answers on Swift concurrency's threads, behind every other suite), unless
/// the test is about a receiver that does not answer.
private func configuration(
    _ path: String, url: String, secrets: [String] = [secret], timeout: Duration = hangGuard
) -> ServiceConfiguration {
    var c = testConfiguration(path: path)
    c.webhooks = WebhookSettings(endpoints: [
        WebhookEndpoint(name: "crm", url: url, secrets: secrets, maxConcurrent: 4, timeout: timeout)
    ])
    c.webhooks.allowHTTP = true
    c.webhooks.pollMs = 20
    return c
}

/// Runs the dispatcher beside `body`, then stops it.
private func withDispatcher(_ app: TestApp, _ body: () async throws -> Void) async throws {
    let running = Task { await app.webhooks.run() }
    defer { running.cancel() }
    try await body()
    running.cancel()
    await running.value
}

/// A sink on loopback, the test service sending to it, the dispatcher running: `body` gets the
/// application, its port and the sink.
private func withSinkAndDispatcher(_ body: (TestApp, Int, WebhookSink) async throws -> Void) async throws {
    let clock = TestClock()
    let sink = WebhookSink(secrets: [secret], now: clock.wall)
    let served = try WebhookSink.serve(sink, logger: quietLogger)
    defer { Task { await served.stop() } }
    let url = served.url
    let wired = { (path: String) in configuration(path, url: url) }
    try await withClockedService(configuration: wired, clock: clock) { app, port, _, _ in
        try await withDispatcher(app) { try await body(app, port, sink) }
    }
}

/// Waits until the dispatcher has sent everything due at the test clock's now and recorded what
/// came of it.
private func deliveriesSettled(_ app: TestApp) async -> Bool {
    await settled(app.webhooks.quiescence)
}

private func count(_ app: TestApp, _ sql: String) async throws -> Int64 {
    try await app.database.read { db in try db.scalarInt(sql) ?? 0 }
}

/// Every message was acknowledged exactly once; each id arrived again only after an attempt that
/// was not acknowledged; each subscriber's acknowledged versions never go back; every signature
/// verified and every payload matches the schema.
private func expectDeliveredOnceInOrder(_ arrivals: [WebhookSink.Arrival], messages: Set<String>) {
    var acknowledged: [String: Int] = [:]
    var lastVersion: [String: Int64] = [:]
    for a in arrivals {
        #expect(a.signature == .valid)
        #expect(a.schemaProblems.isEmpty, "\(a.schemaProblems)")
        guard a.acknowledged, let id = a.webhookID, let user = a.appUserID, let version = a.version else { continue }
        acknowledged[id, default: 0] += 1
        #expect(version >= lastVersion[user, default: 0], "\(user) got version \(version) after \(lastVersion[user] ?? 0)")
        lastVersion[user] = version
    }
    #expect(Set(acknowledged.keys) == messages)
    #expect(acknowledged.values.allSatisfy { $0 == 1 }, "\(acknowledged.filter { $0.value != 1 })")
}

private func messageIDs(_ app: TestApp) async throws -> Set<String> {
    try await app.database.read { db in
        let q = try db.prepare("SELECT id FROM webhook_messages")
        var ids: Set<String> = []
        while try q.step() { ids.insert(q.text(0)!) }
        return ids
    }
}

@Suite("Outbound webhooks", .serialized)
struct WebhookTests {
    @Test func everyEventArrivesOnceSignedAndAsTheEventsRouteListsIt() async throws {
        try await withSinkAndDispatcher { app, port, sink in
            for (user, receipt) in [
                ("alice", "active_monthly:a1"), ("alice", "non_consumable:a2"), ("bob", "trial:b1"), ("bob", "refunded:b2"),
            ] {
                #expect(try await postReceipt(port, user: user, receipt).status == 200)
            }
            let messages = try await messageIDs(app)
            #expect(messages.count >= 4)
            #expect(await deliveriesSettled(app))
            expectDeliveredOnceInOrder(sink.arrivals, messages: messages)
            for user in ["alice", "bob"] {
                // Each event /events lists arrived, with the same content.
                let listed = try await get(port, "/v1/subscribers/\(user)/events", key: TestSecrets.secretKey).json
                let listedIDs = Set(((listed["events"] as? [[String: Any]]) ?? []).compactMap { $0["id"] as? String })
                let pushed = Set(
                    sink.arrivals.filter { $0.appUserID == user }.compactMap { $0.payload?["event"]?["id"]?.string })
                #expect(!listedIDs.isEmpty && listedIDs == pushed)
                // The newest push carries the document's current version.
                let document = try await get(port, "/v1/subscribers/\(user)", key: TestSecrets.secretKey).json
                let newest = sink.arrivals.filter { $0.appUserID == user }.compactMap(\.version).max()
                #expect(newest.map(Int.init) == document["version"] as? Int)
            }
            #expect(try await count(app, "SELECT count(*) FROM webhook_deliveries WHERE status != 'delivered'") == 0)
            let listing = try await get(
                port, "/v1/admin/webhooks/deliveries?status=delivered&app_user_id=bob", key: TestSecrets.secretKey)
            let rows = listing.json["deliveries"] as? [[String: Any]] ?? []
            #expect(
                listing.status == 200 && !rows.isEmpty
                    && rows.allSatisfy { $0["app_user_id"] as? String == "bob" && $0["last_status"] as? Int == 204 })
            let ready = try await get(port, "/readyz").json
            #expect(((ready["webhooks"] as? [String: Any])?["crm"] as? [String: Any])?["pending"] as? Int == 0)
        }
    }

    @Test func aMergeArrivesAsOneEventNamingBothIds() async throws {
        try await withSinkAndDispatcher { app, port, sink in
            #expect(try await postReceipt(port, user: "anon-1", "active_monthly:m1").status == 200)
            let before = try await messageIDs(app)
            let merged = try await post(
                port, "/v1/subscribers/account-1/aliases", #"{"alias":"anon-1"}"#, key: TestSecrets.secretKey)
            #expect(merged.status == 200, "\(merged.body)")
            let messages = try await messageIDs(app)
            #expect(messages.subtracting(before).count == 1, "one event, not the alias's history again")
            #expect(await deliveriesSettled(app))
            expectDeliveredOnceInOrder(sink.arrivals, messages: messages)
            let merge = sink.arrivals.filter { $0.payload?["type"]?.string == "merge" }
            #expect(merge.count == 1)
            #expect(merge.first?.appUserID == "account-1")
            #expect(merge.first?.payload?["event"]?["facts"]?["alias_app_user_id"]?.string == "anon-1")
            #expect(merge.first?.payload?["subscriber"]?["aliases"] == .array([.string("anon-1")]))
        }
    }

    @Test func aReceiverThatFailsHangsAndIsDownForADayGetsEverythingAfterItRecovers() async throws {
        let clock = TestClock()
        let sink = WebhookSink(secrets: [secret], now: clock.wall)
        var served = try WebhookSink.serve(sink, logger: quietLogger)
        let sinkPort = served.port
        let url = served.url
        // The timeout is wide enough that a 503 answered on a loaded machine (CI runs the PostgreSQL
        // suites beside this) is never taken for a hang; the hang below outlasts it.
        let wired = { (path: String) in configuration(path, url: url, timeout: .seconds(8)) }
        try await withClockedService(configuration: wired, clock: clock) { app, port, _, clock in
            /// Every delivery due at the test clock's now was attempted and its attempt has ended.
            func attempted() async throws -> Bool {
                guard await deliveriesSettled(app) else { return false }
                return try await count(
                    app,
                    """
                    SELECT count(*) FROM webhook_deliveries
                    WHERE status = 'pending' AND (due_at <= \(clock.now) OR claimed_by IS NOT NULL)
                    """) == 0
            }
            try await withDispatcher(app) {
                sink.behaviour = .fail(status: 503)
                for (user, receipt) in [
                    ("alice", "active_monthly:a1"), ("alice", "non_consumable:a2"), ("alice", "consumable:a3"),
                    ("bob", "trial:b1"),
                ] {
                    #expect(try await postReceipt(port, user: user, receipt).status == 200)
                }
                #expect(try await attempted())
                // Only the head of each subscriber's queue was tried.
                let heads = Set(sink.arrivals.compactMap(\.appUserID))
                #expect(heads == ["alice", "bob"] && sink.arrivals.count == 2)
                let pending = try await get(
                    port, "/v1/admin/webhooks/deliveries?status=pending&app_user_id=alice", key: TestSecrets.secretKey)
                let rows = pending.json["deliveries"] as? [[String: Any]] ?? []
                #expect(rows.map { $0["attempts"] as? Int } == Array(repeating: 0, count: rows.count - 1) + [1])
                #expect(rows.last?["last_status"] as? Int == 503, "\(rows.last ?? [:])")

                // It hangs past the 8 s timeout: no answer is a failure too.
                sink.behaviour = .hang(.seconds(9))
                clock.advance(by: 31_000)
                #expect(try await attempted())
                #expect(sink.arrivals.count == 4)

                // Down for a day: every retry in it finds nobody.
                await served.stop()
                for _ in 0..<24 {
                    clock.advance(by: 3_600_000)
                    #expect(try await attempted())
                }
                #expect(try await count(app, "SELECT count(*) FROM webhook_deliveries WHERE status = 'failed'") == 0)

                // Back: the next retry (at most 6 h later) delivers, then the rest follow in order.
                sink.behaviour = .acknowledge
                served = try WebhookSink.serve(sink, port: sinkPort, logger: quietLogger)
                clock.advance(by: 6 * 3_600_000)
                let messages = try await messageIDs(app)
                #expect(await deliveriesSettled(app))
                #expect(
                    try await count(app, "SELECT count(*) FROM webhook_deliveries WHERE status = 'delivered'")
                        == messages.count)
                expectDeliveredOnceInOrder(sink.arrivals, messages: messages)
                let attempts = try await count(app, "SELECT max(attempts) FROM webhook_deliveries")
                #expect(attempts > 5)
            }
        }
        await served.stop()
    }

    @Test func rotationRetryAndReplay() async throws {
        // The receiver still knows only the old secret; receiptd signs with both.
        let clock = TestClock()
        let sink = WebhookSink(secrets: [oldSecret], now: clock.wall)
        let served = try WebhookSink.serve(sink, logger: quietLogger)
        let url = served.url
        let wired = { (path: String) in configuration(path, url: url, secrets: [secret, oldSecret]) }
        try await withClockedService(configuration: wired, clock: clock) { app, port, _, _ in
            try await withDispatcher(app) {
                #expect(try await postReceipt(port, user: "carol", "active_monthly:c1").status == 200)
                #expect(try await postReceipt(port, user: "dan", "non_consumable:d1").status == 200)
                let messages = try await messageIDs(app)
                #expect(await deliveriesSettled(app))
                expectDeliveredOnceInOrder(sink.arrivals, messages: messages)

                // Sent again by hand: the same id (once the dispatcher has recorded the first
                // attempt, as it has once settled: until then a retry is refused with 409).
                let first = try #require(
                    try await get(port, "/v1/admin/webhooks/deliveries?app_user_id=dan", key: TestSecrets.secretKey).json[
                        "deliveries"] as? [[String: Any]])
                let id = try #require(first.first?["id"] as? String)
                let retried = try await post(port, "/v1/admin/webhooks/deliveries/\(id)/retry", "", key: TestSecrets.secretKey)
                #expect(retried.status == 202 && retried.json["status"] as? String == "pending")
                #expect(await deliveriesSettled(app))
                #expect(sink.arrivals.count == messages.count + 1)
                #expect(sink.arrivals.last?.webhookID == first.first?["webhook_id"] as? String)

                // Replayed from a time: everything since, again, same ids.
                let replay = try await post(
                    port, "/v1/admin/webhooks/crm/replay", #"{"since":"2000-01-01"}"#, key: TestSecrets.secretKey)
                #expect(replay.status == 202 && replay.json["queued"] as? Int == messages.count)
                #expect(await deliveriesSettled(app))
                #expect(sink.arrivals.count == 2 * messages.count + 1)
                #expect(Set(sink.arrivals.suffix(messages.count).compactMap(\.webhookID)) == messages)

                // Refusals: a stable code each.
                #expect(
                    try await post(port, "/v1/admin/webhooks/nope/replay", #"{"since":"2000-01-01"}"#, key: TestSecrets.secretKey)
                        .errorCode == "webhook_endpoint_not_found")
                #expect(
                    try await post(port, "/v1/admin/webhooks/crm/replay", #"{"since":"yesterday"}"#, key: TestSecrets.secretKey)
                        .errorCode == "invalid_request")
                #expect(
                    try await post(port, "/v1/admin/webhooks/deliveries/999999/retry", "", key: TestSecrets.secretKey).errorCode
                        == "webhook_delivery_not_found")
                #expect(
                    try await get(port, "/v1/admin/webhooks/deliveries?status=lost", key: TestSecrets.secretKey).errorCode
                        == "invalid_request")
                #expect(try await get(port, "/v1/admin/webhooks/deliveries", key: TestSecrets.publicKey).status == 403)
            }
        }
        await served.stop()
    }
}
