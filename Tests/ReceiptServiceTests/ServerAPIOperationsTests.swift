import AppStore
import Charts
import Clocks
import Crypto
import CustomerOffers
import DatabaseEngine
import Entitlements
import Foundation
import JSON
import ReceiptTesting
import Storage
import StoreCalls
import Testing
import Workers

@testable import AppStoreSimulator
@testable import Notifications
@testable import ReceiptCore
@testable import ReceiptService

private let day: Int64 = 86_400_000
private let hour: Int64 = 3_600_000

/// The test configuration with the simulator's App Store Server API, trusting the test PKI, for
/// the simulator's app (whose production notifications carry appAppleId 1234567890).
private func configuration(
    _ verifier: VerifyPurchase.Verifier = .verifyReceipt, consumption: Bool = false, finishConsumables: Bool = false,
    setAppAccountTokens: Bool = false
) -> (String) -> ServiceConfiguration {
    { path in
        var refresher = Refresher.Settings()
        refresher.maxPerSecond = 1000
        var c = testConfiguration(
            path: path, signedData: .init(roots: [TestPKI.root], appAppleIDs: [1_234_567_890]), refresher: refresher)
        c.appStore.verifier = verifier
        c.appStore.consumption.enabled = consumption
        c.appStore.finishConsumables = finishConsumables
        c.appStore.setAppAccountTokens = setAppAccountTokens
        c.catalog = Catalog(["coins_100": .consumable])
        return c
    }
}

private func premium(_ document: [String: Any]) -> [String: Any]? { entitlement(document, "premium") }

private func metrics(_ port: Int) async throws -> String { try await get(port, "/metrics", key: TestSecrets.secretKey).body }

@Suite("App Store Server API: refresher, shadow, catch-up, support, consumption", .serialized)
struct ServerAPIOperationsTests {
    // MARK: Refresher

    @Test func aStoreKit2SubscriptionWithNoReceiptIsRefreshedThroughTheServerAPI() async throws {
        try await withClockedService(configuration: configuration()) { app, port, db, clock in
            let simulator = try #require(app.appStore)
            let bought = simulator.purchase(.renewing, tag: "sk2")
            let posted = try await postReceipts(port, #"{"app_user_id":"kit","transaction_id":"\#(bought.transactionID)"}"#)
            #expect(posted.status == 200 && premium(posted.json)?["active"] as? Bool == true, "\(posted.body)")
            #expect(try TestDatabase.open(db).scalarInt("SELECT count(*) FROM latest_receipts") == 0)
            // Apple renewed it; the notification was lost. At the period's end it reads expired …
            clock.advance(by: 26 * day)
            #expect(premium(try await subscriber(port, "kit").json)?["active"] as? Bool == false)
            // … until the refresher asks Get All Subscription Statuses.
            let pass = await app.refresher.runPass()
            #expect(pass.due == 1 && pass.refreshed == 1 && pass.changed == 1, "\(pass)")
            let after = try await subscriber(port, "kit").json
            #expect(premium(after)?["active"] as? Bool == true, "\(after)")
            let database = try TestDatabase.open(db)
            #expect(try database.scalarText("SELECT outcome FROM refresh_checks") == "server_api")
            #expect(
                try database.scalarInt("SELECT count(*) FROM verifications WHERE app_user_id = 'kit' AND outcome = 'server_api'")
                    == 2)
            // Answered: not due again until the new period ends.
            #expect(await app.refresher.runPass().due == 0)
        }
    }

    @Test func aStoreKit2SubscriptionAppleDoesNotKnowIsLeftAsIsAndAnOutageBacksOff() async throws {
        try await withClockedService(configuration: configuration()) { app, port, db, clock in
            let simulator = try #require(app.appStore)
            let bought = simulator.purchase(.renewing, tag: "out")
            #expect(
                try await postReceipts(port, #"{"app_user_id":"out","transaction_id":"\#(bought.transactionID)"}"#).status == 200)
            clock.advance(by: 26 * day)
            let before = try tableSnapshot(db)
            simulator.setOutage(.seconds(3600))
            let pass = await app.refresher.runPass()
            #expect(pass.unavailable == 1, "\(pass)")
            let database = try TestDatabase.open(db)
            #expect(try database.scalarInt("SELECT failures FROM refresh_checks") == 1)
            #expect(try database.scalarText("SELECT outcome FROM refresh_checks") == "server_api_unavailable")
            // Nothing revoked, nothing learned; backing off: not due on the next pass.
            #expect(try tableSnapshot(db).filter { !$0.hasPrefix("refresh") } == before.filter { !$0.hasPrefix("refresh") })
            #expect(await app.refresher.runPass().due == 0)
            simulator.setOutage(.zero)
        }
    }

    // MARK: Shadow mode

    @Test func shadowModeReportsNothingWhenTheAnswersAgreeAndAPlantedDifference() async throws {
        try await withClockedService(configuration: configuration(.shadow)) { app, port, db, _ in
            let simulator = try #require(app.appStore)
            for (n, scenario) in ["active_monthly", "upgraded", "grace_period", "refunded", "non_consumable"].enumerated() {
                let r = try await postReceipt(port, user: "sh\(n)", "\(scenario):sh")
                #expect(r.status == 200, "\(r.body)")
            }
            await app.background.idle()
            let scrape = try await metrics(port)
            #expect(scrape.contains(#"shadow_comparisons_total{outcome="agree"} 5"#), "\(scrape)")
            let empty = try await get(port, "/v1/admin/shadow-diffs", key: TestSecrets.secretKey)
            #expect(empty.status == 200 && (empty.json["shadow_diffs"] as? [Any])?.isEmpty == true, "\(empty.body)")
            // The Server API now states the subscription three days longer than verifyReceipt does.
            let original = try #require(
                try TestDatabase.open(db).scalarText(
                    "SELECT original_transaction_id FROM ownership WHERE app_user_id = 'sh0'"))
            simulator.serverAPI.skew(originalTransactionID: original, byMs: 3 * day)
            let again = try await postReceipt(port, user: "sh0", "active_monthly:sh")
            #expect(again.status == 200)
            await app.background.idle()
            #expect(try await metrics(port).contains(#"shadow_comparisons_total{outcome="differ"} 1"#))
            let listed = try await get(port, "/v1/admin/shadow-diffs", key: TestSecrets.secretKey)
            let diffs = try #require(listed.json["shadow_diffs"] as? [[String: Any]])
            #expect(diffs.count == 1 && diffs.first?["app_user_id"] as? String == "sh0", "\(listed.body)")
            let paths = (diffs.first?["differences"] as? [[String: Any]] ?? []).compactMap { $0["path"] as? String }
            #expect(paths.contains("entitlements.premium.expires_at") && paths.contains("subscriptions.monthly.expires_at"))
            // The client was answered by verifyReceipt: its expiry, not the Server API's.
            #expect(
                premium(again.json)?["expires_at"] as? String == premium(try await subscriber(port, "sh0").json)?["expires_at"]
                    as? String)
            #expect(try await get(port, "/v1/admin/shadow-diffs", key: TestSecrets.publicKey).status == 403)
        }
    }

    // MARK: Catch-up

    @Test func aRestartAfterADayOfflineAppliesEveryMissedNotificationOnce() async throws {
        try await withScratchDirectory("receiptd-catch-up") { dir in
            let clock = TestClock()
            var app = try await TestApp.open(configuration()(dir + "/db.sqlite"), clock: clock, monotonic: ManualMonotonicClock())
            var port = try app.start()
            let simulator = try #require(app.appStore)
            let bought = simulator.purchase(.activeMonthly, tag: "cu")
            #expect(
                try await postReceipts(port, #"{"app_user_id":"cu","transaction_id":"\#(bought.transactionID)"}"#).status == 200)
            // One notification delivered, two missed while receiptd ran (Apple's retries failed) …
            let delivered = try #require(simulator.notification("DID_RENEW", transactionID: bought.transactionID))
            #expect(try await post(port, "/v1/notifications/apple", #"{"signedPayload":"\#(delivered)"}"#).status == 200)
            clock.advance(by: hour)
            _ = simulator.notification("DID_CHANGE_RENEWAL_PREF", transactionID: bought.transactionID)
            _ = simulator.notification(
                "DID_CHANGE_RENEWAL_STATUS", subtype: "AUTO_RENEW_DISABLED", transactionID: bought.transactionID)
            // … and a day offline, during which Apple sent two more.
            await app.application.stop()
            clock.advance(by: 12 * hour)
            _ = simulator.notification("PRICE_INCREASE", subtype: "ACCEPTED", transactionID: bought.transactionID)
            clock.advance(by: 12 * hour)
            _ = simulator.notification("RENEWAL_EXTENDED", transactionID: bought.transactionID)
            clock.advance(by: 1000)
            app = try await app.restarted(monotonic: ManualMonotonicClock())
            port = try app.start()
            // At start: from the newest stored notification (minus the overlap) to now.
            let first = await app.catchUp.catchUp()
            #expect(first == .init(listed: 5, stored: 4, duplicates: 1, refused: 0, failed: 0), "\(first)")
            let db = try Database(path: dir + "/db.sqlite")
            #expect(try db.scalarInt("SELECT count(*) FROM notifications") == 5)
            #expect(try db.scalarInt("SELECT count(DISTINCT dedupe_key) FROM notifications") == 5)
            #expect(try db.scalarInt("SELECT count(*) FROM notifications WHERE app_user_id = 'cu'") == 5)
            // The next run finds only what it has seen (the overlap): nothing applies twice.
            clock.advance(by: hour)
            let second = await app.catchUp.catchUp()
            #expect(second.stored == 0 && second.listed == second.duplicates && second.failed == 0, "\(second)")
            // A backfill over the whole period (receiptd backfill --since): all duplicates.
            let backfill = await app.catchUp.catchUp(since: clock.now - 3 * day)
            #expect(backfill == .init(listed: 5, stored: 0, duplicates: 5, refused: 0, failed: 0), "\(backfill)")
            #expect(try db.scalarInt("SELECT count(*) FROM notifications") == 5)
            #expect(try await metrics(port).contains(#"notification_catch_up_total{outcome="stored"} 4"#))
            await app.stop()
        }
    }

    // MARK: Support

    @Test func anOrderIDFindsItsTransactionsAndWhoHoldsThem() async throws {
        try await withClockedService(configuration: configuration()) { app, port, db, _ in
            let bought = try #require(app.appStore).purchase(.activeMonthly, tag: "ord")
            #expect(
                try await postReceipts(port, #"{"app_user_id":"olga","transaction_id":"\#(bought.transactionID)"}"#).status == 200
            )
            let original = try #require(
                try TestDatabase.open(db).scalarText("SELECT original_transaction_id FROM ownership WHERE app_user_id = 'olga'"))
            let found = try await get(port, "/v1/admin/orders/M\(original)", key: TestSecrets.secretKey)
            #expect(found.status == 200, "\(found.body)")
            let transactions = try #require(found.json["transactions"] as? [[String: Any]])
            #expect(!transactions.isEmpty && transactions.allSatisfy { $0["app_user_id"] as? String == "olga" }, "\(found.body)")
            #expect(found.json["environment"] as? String == "production")
            let unknown = try await get(port, "/v1/admin/orders/MNOSUCHORDER", key: TestSecrets.secretKey)
            #expect(unknown.status == 404 && unknown.errorCode == "order_not_found", "\(unknown.body)")
            let bad = try await get(port, "/v1/admin/orders/M%21%21", key: TestSecrets.secretKey)
            #expect(bad.status == 400 && bad.errorCode == "invalid_request", "\(bad.body)")
            #expect(try await get(port, "/v1/admin/orders/M\(original)", key: TestSecrets.publicKey).status == 403)
        }
    }

    @Test func anExtensionMovesTheExpiryAtAppleAndInTheDocument() async throws {
        try await withClockedService(configuration: configuration()) { app, port, _, _ in
            let bought = try #require(app.appStore).purchase(.activeMonthly, tag: "ext")
            let posted = try await postReceipts(port, #"{"app_user_id":"ext","transaction_id":"\#(bought.transactionID)"}"#)
            let before = try #require(premium(posted.json)?["expires_at"] as? String)
            let r = try await post(
                port, "/v1/subscribers/ext/extend", #"{"days":10,"reason":"service_issue"}"#, key: TestSecrets.secretKey)
            #expect(r.status == 200, "\(r.body)")
            let after = try #require(premium(r.json["subscriber"] as? [String: Any] ?? [:])?["expires_at"] as? String)
            let iso = ISO8601DateFormatter()
            iso.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            func date(_ s: String) -> Date? { iso.date(from: s) ?? ISO8601DateFormatter().date(from: s) }
            #expect(
                try #require(date(after)).timeIntervalSince(try #require(date(before))) == 10 * 86_400, "\(before) → \(after)")
            #expect(premium(try await subscriber(port, "ext").json)?["expires_at"] as? String == after)
            for (body, status, code) in [
                (#"{"days":0,"reason":"service_issue"}"#, 400, "invalid_request"),
                (#"{"days":91,"reason":"service_issue"}"#, 400, "invalid_request"),
                (#"{"days":5,"reason":"because"}"#, 400, "invalid_request"),
                (#"{"days":5,"reason":"other","original_transaction_id":"999"}"#, 404, "subscription_not_found"),
                ("not json", 400, "invalid_request"),
            ] {
                let refused = try await post(port, "/v1/subscribers/ext/extend", body, key: TestSecrets.secretKey)
                #expect(refused.status == status && refused.errorCode == code, "\(body): \(refused.body)")
            }
            let nobody = try await post(
                port, "/v1/subscribers/nobody/extend", #"{"days":5,"reason":"other"}"#, key: TestSecrets.secretKey)
            #expect(nobody.status == 404 && nobody.errorCode == "subscription_not_found")
            #expect(
                try await post(port, "/v1/subscribers/ext/extend", #"{"days":5,"reason":"other"}"#, key: TestSecrets.publicKey)
                    .status == 403)
        }
    }

    /// Outage compensation for everyone: stored and sent once per request id, polled until Apple
    /// completes it, then every stored subscription it reached refetched: its document moves by
    /// the days; another product's and a lapsed one's do not.
    @Test func aMassExtensionIsSentPolledUntilCompleteAndItsNewExpiriesStored() async throws {
        try await withClockedService(configuration: configuration()) { app, port, db, clock in
            let simulator = try #require(app.appStore)
            var before: [String: String] = [:]
            for (user, scenario) in [
                ("m1", Scenario.activeMonthly), ("m2", .activeMonthly), ("y1", .upgraded), ("gone", .expiredVoluntary),
            ] {
                let bought = simulator.purchase(scenario, tag: user)
                let posted = try await postReceipts(
                    port, #"{"app_user_id":"\#(user)","transaction_id":"\#(bought.transactionID)"}"#)
                #expect(posted.status == 200, "\(posted.body)")
                before[user] = premium(posted.json)?["expires_at"] as? String
            }
            let id = "0f6f2b8e-3c4a-4d8e-9a61-7c2d1e5b9a10"
            let body = #"{"product_id":"monthly","days":5,"reason":"service_issue","request_id":"\#(id)","storefronts":["USA"]}"#
            let asked = try await post(port, "/v1/admin/mass-extensions", body, key: TestSecrets.secretKey)
            #expect(asked.status == 202, "\(asked.body)")
            #expect(asked.json["status"] as? String == "in_progress" && asked.json["request_id"] as? String == id)
            #expect((asked.json["requested_by"] as? String)?.hasPrefix("key:") == true)
            // Apple extended the two active monthly subscriptions (y1's is premium_monthly now).
            #expect(Set(simulator.serverAPI.massExtended(requestID: id) ?? []).count == 2)
            // The same request again is the same request; the same id for another is refused.
            let again = try await post(port, "/v1/admin/mass-extensions", body, key: TestSecrets.secretKey)
            #expect(again.status == 200 && again.json["status"] as? String == "in_progress", "\(again.body)")
            #expect(Set(simulator.serverAPI.massExtended(requestID: id) ?? []).count == 2)
            let reused = try await post(
                port, "/v1/admin/mass-extensions", body.replacingOccurrences(of: #""days":5"#, with: #""days":6"#),
                key: TestSecrets.secretKey)
            #expect(reused.status == 409 && reused.errorCode == "request_id_reused", "\(reused.body)")
            // Not due before the poll interval; Apple still working at the first poll, complete at the next.
            #expect(await app.massExtensions.pass() == 0)
            clock.advance(by: 20_000)
            #expect(await app.massExtensions.pass() == 0)
            clock.advance(by: 300_000)
            #expect(await app.massExtensions.pass() == 1)
            let polled = try await get(port, "/v1/admin/mass-extensions/\(id)", key: TestSecrets.secretKey)
            #expect(
                polled.json["status"] as? String == "refreshing" && polled.json["succeeded_count"] as? Int == 2, "\(polled.body)")
            // Apple down while the new expiries are fetched: nothing revoked, the walk waits for the backoff.
            simulator.setOutage(.seconds(3600))
            #expect(await app.massExtensions.pass() == 1)
            let waiting = try await get(port, "/v1/admin/mass-extensions/\(id)", key: TestSecrets.secretKey)
            #expect(waiting.json["status"] as? String == "refreshing" && waiting.json["attempts"] as? Int == 1, "\(waiting.body)")
            #expect(waiting.json["subscriptions_refreshed"] as? Int == 0 && waiting.json["last_error"] is String)
            #expect(premium(try await subscriber(port, "m1").json)?["active"] as? Bool == true)
            simulator.setOutage(.zero)
            #expect(await app.massExtensions.pass() == 0)
            clock.advance(by: 30_000)
            #expect(await app.massExtensions.pass() == 1)
            let done = try await get(port, "/v1/admin/mass-extensions/\(id)", key: TestSecrets.secretKey)
            #expect(done.json["status"] as? String == "complete", "\(done.body)")
            #expect(done.json["subscriptions_refreshed"] as? Int == 2 && done.json["next_step_at"] is NSNull, "\(done.body)")
            #expect(await app.massExtensions.pass() == 0)
            let iso = ISO8601DateFormatter()
            iso.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            func date(_ s: String?) -> Date? { s.flatMap { iso.date(from: $0) ?? ISO8601DateFormatter().date(from: $0) } }
            for user in ["m1", "m2"] {
                let now = premium(try await subscriber(port, user).json)?["expires_at"] as? String
                let moved = try #require(date(now)).timeIntervalSince(try #require(date(before[user])))
                #expect(moved == 5 * 86_400, "\(user): \(before[user] ?? "") → \(now ?? "")")
            }
            for user in ["y1", "gone"] {
                #expect(premium(try await subscriber(port, user).json)?["expires_at"] as? String == before[user], "\(user)")
            }
            let listed = try await get(port, "/v1/admin/mass-extensions", key: TestSecrets.secretKey)
            #expect((listed.json["mass_extensions"] as? [[String: Any]])?.map { $0["request_id"] as? String } == [id])
            #expect(try TestDatabase.open(db).scalarInt("SELECT refreshed FROM mass_extensions") == 2)
        }
    }

    /// Apple's SUMMARY notification ends the wait for a poll; a refusal is said and kept; bad
    /// input is refused before anything is stored or sent; an unknown id is 404.
    @Test func aMassExtensionsSummaryEndsTheWaitAndBadRequestsAreRefused() async throws {
        try await withClockedService(configuration: configuration()) { app, port, db, clock in
            let simulator = try #require(app.appStore)
            let bought = simulator.purchase(.activeMonthly, tag: "sum")
            #expect(
                try await postReceipts(port, #"{"app_user_id":"sum","transaction_id":"\#(bought.transactionID)"}"#).status == 200)
            let id = "5b0d7c0e-8f9e-4c1b-a8a7-2f1e0d9c8b7a"
            let asked = try await post(
                port, "/v1/admin/mass-extensions", #"{"product_id":"monthly","days":3,"reason":"other","request_id":"\#(id)"}"#,
                key: TestSecrets.secretKey)
            #expect(asked.status == 202, "\(asked.body)")
            clock.advance(by: 31_000)
            let summary = try #require(simulator.serverAPI.massExtensionSummary(requestID: id))
            let delivered = try await post(port, "/v1/notifications/apple", #"{"signedPayload":"\#(summary)"}"#)
            #expect(delivered.status == 200 && delivered.json["outcome"] as? String == "recorded", "\(delivered.body)")
            let summarized = try await get(port, "/v1/admin/mass-extensions/\(id)", key: TestSecrets.secretKey)
            #expect(summarized.json["status"] as? String == "refreshing", "\(summarized.body)")
            #expect(summarized.json["succeeded_count"] as? Int == 1 && summarized.json["failed_count"] as? Int == 0)
            #expect(await app.massExtensions.pass() == 1)
            #expect(
                try await get(port, "/v1/admin/mass-extensions/\(id)", key: TestSecrets.secretKey).json["status"] as? String
                    == "complete")

            // Apple down: the request waits, `submitting`, and is sent again once due.
            simulator.setOutage(.seconds(3600))
            let waiting = "2c1e1a9b-6d0f-4f5e-8b3a-9e8d7c6b5a40"
            let outage = try await post(
                port, "/v1/admin/mass-extensions",
                #"{"product_id":"monthly","days":2,"reason":"other","request_id":"\#(waiting)"}"#, key: TestSecrets.secretKey)
            #expect(outage.status == 202 && outage.json["status"] as? String == "submitting", "\(outage.body)")
            #expect(outage.json["last_error"] is String && outage.json["attempts"] as? Int == 1)
            simulator.setOutage(.zero)
            #expect(await app.massExtensions.pass() == 0)
            clock.advance(by: 30_000)
            #expect(await app.massExtensions.pass() == 1)
            let sent = try await get(port, "/v1/admin/mass-extensions/\(waiting)", key: TestSecrets.secretKey)
            #expect(sent.json["status"] as? String == "in_progress" && sent.json["last_error"] is NSNull, "\(sent.body)")

            // Apple refuses for good (its request identifier names another request there): said, and kept.
            let taken = "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d"
            _ = simulator.serverAPI.massExtend(
                Array(#"{"productId":"yearly","extendByDays":1,"extendReasonCode":0,"requestIdentifier":"\#(taken)"}"#.utf8),
                environment: "Production", now: clock.wall.now(), everyPurchase: { _ in [] })
            let body = #"{"product_id":"monthly","days":2,"reason":"other","request_id":"\#(taken)"}"#
            let refusedByApple = try await post(port, "/v1/admin/mass-extensions", body, key: TestSecrets.secretKey)
            #expect(refusedByApple.status == 422 && refusedByApple.errorCode == "app_store_refused", "\(refusedByApple.body)")
            let kept = try await post(port, "/v1/admin/mass-extensions", body, key: TestSecrets.secretKey)
            #expect(kept.status == 200 && kept.json["status"] as? String == "refused", "\(kept.body)")
            #expect(kept.json["next_step_at"] is NSNull && kept.json["finished_at"] is String)

            let before = try TestDatabase.open(db).scalarInt("SELECT count(*) FROM mass_extensions")
            let uuid = "7d9f7a52-1111-4e2b-9c3d-000000000001"
            for (body, status, code) in [
                (#"{"product_id":"monthly","days":3,"reason":"other"}"#, 400, "invalid_request"),
                (#"{"product_id":"monthly","days":3,"reason":"other","request_id":"nope"}"#, 400, "invalid_request"),
                (#"{"product_id":"..","days":3,"reason":"other","request_id":"\#(uuid)"}"#, 400, "invalid_request"),
                (#"{"product_id":"a/b","days":3,"reason":"other","request_id":"\#(uuid)"}"#, 400, "invalid_request"),
                (#"{"product_id":"monthly","days":91,"reason":"other","request_id":"\#(uuid)"}"#, 400, "invalid_request"),
                (#"{"product_id":"monthly","days":3,"reason":"why","request_id":"\#(uuid)"}"#, 400, "invalid_request"),
                (
                    #"{"product_id":"monthly","days":3,"reason":"other","request_id":"\#(uuid)","storefronts":["usa"]}"#, 400,
                    "invalid_request"
                ),
                (
                    #"{"product_id":"monthly","days":3,"reason":"other","request_id":"\#(uuid)","storefronts":"USA"}"#, 400,
                    "invalid_request"
                ),
                (
                    #"{"product_id":"monthly","days":3,"reason":"other","request_id":"\#(uuid)","environment":"beta"}"#, 400,
                    "invalid_request"
                ),
                (
                    #"{"product_id":"monthly","days":3,"reason":"other","request_id":"\#(uuid)","bundle_id":"com.other.app"}"#,
                    422, "bundle_mismatch"
                ),
                ("[]", 400, "invalid_request"),
            ] {
                let refused = try await post(port, "/v1/admin/mass-extensions", body, key: TestSecrets.secretKey)
                #expect(refused.status == status && refused.errorCode == code, "\(body): \(refused.body)")
            }
            #expect(try TestDatabase.open(db).scalarInt("SELECT count(*) FROM mass_extensions") == before)
            #expect(
                try await post(
                    port, "/v1/admin/mass-extensions",
                    #"{"product_id":"monthly","days":3,"reason":"other","request_id":"\#(uuid)"}"#,
                    key: TestSecrets.publicKey
                ).status == 403)
            let unknown = try await get(port, "/v1/admin/mass-extensions/\(uuid)", key: TestSecrets.secretKey)
            #expect(unknown.status == 404 && unknown.errorCode == "mass_extension_not_found")
            let malformed = try await get(port, "/v1/admin/mass-extensions/..", key: TestSecrets.secretKey)
            #expect(malformed.status == 404, "\(malformed.body)")
            let cursor = try await get(port, "/v1/admin/mass-extensions?cursor=x", key: TestSecrets.secretKey)
            #expect(cursor.status == 400 && cursor.errorCode == "invalid_request")
        }
    }

    /// Two App Store Connect accounts in one receiptd: each app's receipts go to verifyReceipt with
    /// its account's shared secret, its Server API tokens and offer signatures use its account's
    /// key, and its V1 notifications must carry its account's secret. The simulator answers 21004
    /// or 401 to any other, so a crossed secret fails the request.
    @Test func eachAppsRequestsCarryItsOwnAccountsSecretsOnly() async throws {
        let agency = "com.agency.app"
        let agencySecret = "agency-shared-secret-1"
        let agencyKey = ServerAPIToken.Credentials(
            keyID: "AGENCY0001", issuerID: "00000000-0000-4000-8000-0000000000bb", key: P256.Signing.PrivateKey())
        let setUp = { (path: String) -> ServiceConfiguration in
            var c = configuration()(path)
            c.appStore.bundleIDs = ["com.example.app", agency]
            let home = TestSecrets.serverAPICredentials
            c.offers.key = .init(keyID: home.keyID, issuerID: home.issuerID, key: home.key)
            c.appStore.bundleIDs.insert("com.keyless.app", at: 0)  // asked first when every app is
            c.appStore.accounts = [
                .init(
                    name: "agency", bundleIDs: [agency], sharedSecret: agencySecret, serverAPI: agencyKey,
                    offerKey: .init(keyID: agencyKey.keyID, issuerID: agencyKey.issuerID, key: agencyKey.key)),
                // An account with a shared secret and no In-App Purchase key.
                .init(name: "keyless", bundleIDs: ["com.keyless.app"], sharedSecret: "keyless-secret-1"),
            ]
            return c
        }
        try await withClockedService(configuration: setUp) { app, port, db, _ in
            let simulator = try #require(app.appStore)
            for (user, bundle) in [("home", "com.example.app"), ("agent", agency)] {
                let bought = simulator.purchase(.activeMonthly, tag: user, bundleID: bundle)
                let posted = try await postReceipts(
                    port, #"{"app_user_id":"\#(user)","receipt_data":"\#(bought.receiptData)","bundle_id":"\#(bundle)"}"#)
                #expect(posted.status == 200 && premium(posted.json)?["active"] as? Bool == true, "\(bundle): \(posted.body)")
                let asked = try await post(
                    port, "/v1/admin/test-notification", #"{"bundle_id":"\#(bundle)"}"#, key: TestSecrets.secretKey)
                #expect(asked.status == 202, "\(bundle): \(asked.body)")
                // (A backend's key: receiptd names the customer's transaction; an app would send it.)
                let signed = try await post(
                    port, "/v1/subscribers/\(user)/offers/introductory-eligibility",
                    #"{"product_id":"yearly","bundle_id":"\#(bundle)"}"#, key: TestSecrets.secretKey)
                let keyID = bundle == agency ? agencyKey.keyID : TestSecrets.serverAPICredentials.keyID
                #expect(signed.status == 200 && signed.json["key_id"] as? String == keyID, "\(bundle): \(signed.body)")
            }
            // An app whose account has no key: what needs the Server API says so, and a lookup
            // across every app leaves it out (nothing is sent with another account's key).
            let keyless = try await post(
                port, "/v1/admin/test-notification", #"{"bundle_id":"com.keyless.app"}"#, key: TestSecrets.secretKey)
            #expect(keyless.status == 501 && keyless.errorCode == "server_api_not_configured", "\(keyless.body)")
            let original = try #require(
                try TestDatabase.open(db).scalarText("SELECT original_transaction_id FROM ownership WHERE app_user_id = 'home'"))
            let order = try await get(port, "/v1/admin/orders/M\(original)", key: TestSecrets.secretKey)
            #expect(order.status == 200, "\(order.body)")
            #expect(!simulator.serverAPI.requestTargets.contains { $0.contains("keyless") })
            // A V1 notification about the agency's app: the default account's secret does not open it.
            for (password, status) in [(TestSecrets.sharedSecret, 401), (agencySecret, 400)] {
                let v1 = try await post(
                    port, "/v1/notifications/apple",
                    #"{"notification_type":"DID_RENEW","bid":"\#(agency)","password":"\#(password)"}"#)
                // 400: the password was right, and the body lacks its unified_receipt.
                #expect(v1.status == status, "\(v1.body)")
            }
        }
    }

    @Test func aTestNotificationIsRequested() async throws {
        try await withClockedService(configuration: configuration()) { _, port, _, _ in
            let r = try await post(port, "/v1/admin/test-notification", "", key: TestSecrets.secretKey)
            #expect(r.status == 202 && (r.json["test_notification_token"] as? String)?.isEmpty == false, "\(r.body)")
            let sandbox = try await post(
                port, "/v1/admin/test-notification", #"{"environment":"sandbox"}"#, key: TestSecrets.secretKey)
            #expect(sandbox.status == 202 && sandbox.json["environment"] as? String == "sandbox", "\(sandbox.body)")
            let wrong = try await post(
                port, "/v1/admin/test-notification", #"{"bundle_id":"com.other.app"}"#, key: TestSecrets.secretKey)
            #expect(wrong.status == 422 && wrong.errorCode == "bundle_mismatch", "\(wrong.body)")
        }
    }

    // MARK: Commitment plans

    /// The simulator's commitment plan, asked of the Server API: month 2 of the second 12-month
    /// commitment, its renewal cancelled. The document says so; the first commitment's end is an event.
    @Test func aCommitmentPlanIsShownWithItsMonthAndRenewal() async throws {
        try await withClockedService(configuration: configuration()) { app, port, db, clock in
            let simulator = try #require(app.appStore)
            let bought = simulator.purchase(.commitment, tag: "committed")
            let posted = try await postReceipts(port, #"{"app_user_id":"cami","transaction_id":"\#(bought.transactionID)"}"#)
            #expect(posted.status == 200, "\(posted.body)")
            let document = try await get(port, "/v1/subscribers/cami?explain=true", key: TestSecrets.secretKey)
            let monthly = (document.json["subscriptions"] as? [String: Any])?["monthly"] as? [String: Any]
            #expect(monthly?["active"] as? Bool == true, "\(document.body)")
            let commitment = monthly?["commitment"] as? [String: Any]
            #expect(
                commitment?["billing_period"] as? Int == 2 && commitment?["billing_periods"] as? Int == 12, "\(document.body)")
            #expect(commitment?["will_renew"] as? Bool == false)
            #expect((commitment?["price"] as? [String: Any])?["amount"] as? String == "119.880")
            let decision = ((monthly?["explanation"] as? [String: Any])?["decision"] as? String) ?? ""
            #expect(decision.contains("month 2 of 12") && decision.contains("cancelled the commitment's renewal"), "\(decision)")
            let events = try await get(port, "/v1/subscribers/cami/events?limit=50", key: TestSecrets.secretKey)
            let types = (events.json["events"] as? [[String: Any]] ?? []).compactMap { $0["type"] as? String }
            #expect(types.filter { $0 == "commitment_renewal" }.count == 1, "\(events.body)")
            // `receiptd rederive` maps the stored payloads to exactly what is stored: terms, renewal commitment and all.
            let rederivation = Rederivation(
                state: SubscriberState(
                    settings: EntitlementSettings(
                        rules: EntitlementRules(["premium": ["monthly", "yearly", "premium_monthly", "lifetime"]]),
                        catalog: Catalog(["coins_100": .consumable]), policy: DerivationPolicy())))
            let report = try rederivation.run(try TestDatabase.open(db), now: clock.now, dryRun: true)
            #expect(report.subscribers == 1 && report.changed == 0 && report.transactions == 0, "\(report)")
        }
    }

    // MARK: Finish Transaction

    /// With `appStore.finishConsumables`, a consumable stored for an app user is finished at Apple
    /// once (posted again: not twice); a subscription is not; without the setting nothing is.
    @Test(arguments: [true, false])
    func aStoredConsumableIsFinishedAtAppleWhenReceiptdManagesDelivery(enabled: Bool) async throws {
        try await withClockedService(configuration: configuration(finishConsumables: enabled)) { app, port, db, _ in
            let simulator = try #require(app.appStore)
            let coins = simulator.purchase(.consumable, tag: "fin-\(enabled)")
            let monthly = simulator.purchase(.activeMonthly, tag: "fin-\(enabled)")
            for bought in [coins, monthly, coins] {
                let r = try await postReceipts(port, #"{"app_user_id":"finn","transaction_id":"\#(bought.transactionID)"}"#)
                #expect(r.status == 200, "\(r.body)")
            }
            // The worker (a service; tests make its passes): one call, then nothing more is due.
            if enabled {
                let worker = try #require(app.appStoreCalls)
                #expect(await worker.pass() == 1)
                #expect(await worker.pass() == 0)
                #expect(simulator.serverAPI.finishedTransactions == [coins.transactionID])
                #expect(try TestDatabase.open(db).scalarText("SELECT outcome FROM app_store_calls") == "done")
                #expect(
                    try await metrics(port).contains(#"app_store_calls_total{call="finish_transaction",outcome="done"} 1"#))
            } else {
                #expect(app.appStoreCalls == nil)
                #expect(simulator.serverAPI.finishedTransactions.isEmpty)
            }
            #expect(try TestDatabase.open(db).scalarInt("SELECT count(*) FROM app_store_calls") == (enabled ? 1 : 0))
        }
    }

    // MARK: Set App Account Token

    /// With `appStore.setAppAccountTokens`, a purchase posted without a token gets its holder's
    /// (made once, kept per person); Apple's later notifications carry it and name them even
    /// where nobody holds the purchase yet; a transfer tells Apple the new holder's.
    @Test func apurchaseIsToldItsHoldersTokenAndNotificationsNameThem() async throws {
        try await withClockedService(configuration: configuration(setAppAccountTokens: true)) { app, port, db, _ in
            let simulator = try #require(app.appStore)
            let worker = try #require(app.appStoreCalls)
            let bought = simulator.purchase(.activeMonthly, tag: "tok")
            #expect(
                try await postReceipts(port, #"{"app_user_id":"tia","transaction_id":"\#(bought.transactionID)"}"#).status == 200)
            #expect(await worker.pass() == 1)
            let tia = try #require(
                try TestDatabase.open(db).scalarText("SELECT app_account_token FROM subscribers WHERE app_user_id = 'tia'"))
            let original = try #require(
                try TestDatabase.open(db).scalarText(
                    "SELECT original_transaction_id FROM ownership WHERE app_user_id = 'tia'"))
            #expect(simulator.serverAPI.appAccountTokens[original] == tia)
            // Posted again: Apple now states tia's token; nothing more to tell.
            #expect(
                try await postReceipts(port, #"{"app_user_id":"tia","transaction_id":"\#(bought.transactionID)"}"#).status == 200)
            #expect(await worker.pass() == 0)
            #expect(
                try TestDatabase.open(db).scalarInt("SELECT count(*) FROM transactions WHERE app_account_token = '\(tia)'") ?? 0
                    > 0)
            // Another person's backend posts it (the default policy moves it; an app's bare id would
            // not): Apple is told theirs.
            #expect(
                try await postReceipts(
                    port, #"{"app_user_id":"uma","transaction_id":"\#(bought.transactionID)"}"#, key: TestSecrets.secretKey
                ).status == 200)
            #expect(await worker.pass() == 1)
            let uma = try #require(
                try TestDatabase.open(db).scalarText("SELECT app_account_token FROM subscribers WHERE app_user_id = 'uma'"))
            #expect(uma != tia && simulator.serverAPI.appAccountTokens[original] == uma)
            #expect(try await metrics(port).contains(#"app_store_calls_total{call="set_app_account_token",outcome="done"} 2"#))
            // A purchase nobody holds yet, whose token the app never set: once Apple carries a
            // person's token, its notification finds them.
            let gift = simulator.purchase(.nonConsumable, tag: "tok-gift")
            #expect(
                try await postReceipts(port, #"{"app_user_id":"uma","transaction_id":"\#(gift.transactionID)"}"#).status == 200)
            #expect(await worker.pass() == 1)
            let unowned = try #require(
                try TestDatabase.open(db).scalarText(
                    "SELECT original_transaction_id FROM ownership WHERE original_transaction_id <> '\(original)' AND app_user_id = 'uma'"
                ))
            #expect(simulator.serverAPI.appAccountTokens[unowned] == uma)
        }
    }

    /// Two ids merged: the purchases that moved carry the alias's token (made by receiptd, gone
    /// with the alias), and Apple is told the person's.
    @Test func aMergedAliasesPurchasesAreToldTheirPersonsToken() async throws {
        try await withClockedService(configuration: configuration(setAppAccountTokens: true)) { app, port, db, _ in
            let simulator = try #require(app.appStore)
            let worker = try #require(app.appStoreCalls)
            for (user, tag) in [("anon-1", "merge-a"), ("vera", "merge-b")] {
                let bought = simulator.purchase(.activeMonthly, tag: tag)
                #expect(
                    try await postReceipts(port, #"{"app_user_id":"\#(user)","transaction_id":"\#(bought.transactionID)"}"#)
                        .status == 200)
            }
            #expect(await worker.pass() == 2)
            let database = try TestDatabase.open(db)
            let moved = try #require(
                try database.scalarText("SELECT original_transaction_id FROM ownership WHERE app_user_id = 'anon-1'"))
            let merged = try await post(port, "/v1/subscribers/vera/aliases", #"{"alias":"anon-1"}"#, key: TestSecrets.secretKey)
            #expect(merged.status == 200, "\(merged.body)")
            #expect(await worker.pass() == 1)
            let vera = try #require(
                try database.scalarText("SELECT app_account_token FROM subscribers WHERE app_user_id = 'vera'"))
            #expect(simulator.serverAPI.appAccountTokens[moved] == vera)
            #expect(await worker.pass() == 0)
        }
    }

    // MARK: Consumption requests

    @Test func aConsumptionRequestIsAnsweredFromStoredFactsWhenEnabled() async throws {
        try await withClockedService(configuration: configuration(consumption: true)) { app, port, _, _ in
            let simulator = try #require(app.appStore)
            let bought = simulator.purchase(.activeMonthly, tag: "con")
            #expect(
                try await postReceipts(port, #"{"app_user_id":"con","transaction_id":"\#(bought.transactionID)"}"#).status == 200)
            let request = try #require(simulator.notification("CONSUMPTION_REQUEST", transactionID: bought.transactionID))
            let r = try await post(port, "/v1/notifications/apple", #"{"signedPayload":"\#(request)"}"#)
            #expect(r.status == 200, "\(r.body)")
            await app.background.idle()
            #expect(simulator.serverAPI.consumptionAnswers.count == 1)
            let answer = try #require(simulator.serverAPI.consumptionAnswers.first)
            #expect(answer.transactionID == bought.transactionID)
            #expect(answer.body["customerConsented"]?.bool == true && answer.body["deliveryStatus"]?.string == "DELIVERED")
            #expect(answer.body["sampleContentProvided"]?.bool == false && answer.body["refundPreference"] == nil)
            // Five days into a thirty-day period.
            #expect(answer.body["consumptionPercentage"]?.int64 == 16_666, "\(answer.body)")
            // Delivered again: a duplicate, not answered twice.
            #expect(
                try await post(port, "/v1/notifications/apple", #"{"signedPayload":"\#(request)"}"#).json["duplicate"] as? Bool
                    == true)
            await app.background.idle()
            #expect(simulator.serverAPI.consumptionAnswers.count == 1)
        }
    }

    /// RESCIND_CONSENT (its signed AppTransaction verified) withdraws the customer's consent to
    /// share consumption data: their purchases' consumption requests go unanswered from then on.
    @Test func aCustomerWhoRescindedConsentGetsNoConsumptionAnswer() async throws {
        try await withClockedService(configuration: configuration(consumption: true)) { app, port, db, _ in
            let simulator = try #require(app.appStore)
            let bought = simulator.purchase(.activeMonthly, tag: "rescind")
            #expect(
                try await postReceipts(port, #"{"app_user_id":"rita","transaction_id":"\#(bought.transactionID)"}"#).status == 200
            )
            let rescind = try #require(simulator.notification("RESCIND_CONSENT", transactionID: bought.transactionID))
            let r = try await post(port, "/v1/notifications/apple", #"{"signedPayload":"\#(rescind)"}"#)
            #expect(r.status == 200 && r.json["outcome"] as? String == "consent_rescinded", "\(r.body)")
            // Stored with the person it is about: the holder of the purchases that Apple Account made.
            let named = try TestDatabase.open(db).scalarText(
                "SELECT app_user_id FROM notifications WHERE type = 'RESCIND_CONSENT'")
            #expect(named == "rita")
            let request = try #require(simulator.notification("CONSUMPTION_REQUEST", transactionID: bought.transactionID))
            #expect(try await post(port, "/v1/notifications/apple", #"{"signedPayload":"\#(request)"}"#).status == 200)
            await app.background.idle()
            #expect(
                try await get(port, "/metrics", key: TestSecrets.secretKey).body.contains(
                    #"consumption_answers_total{outcome="consent_rescinded"} 1"#))
            #expect(simulator.serverAPI.consumptionAnswers.isEmpty)
            // Another customer's request is still answered.
            let other = simulator.purchase(.activeMonthly, tag: "consents")
            #expect(
                try await postReceipts(port, #"{"app_user_id":"cora","transaction_id":"\#(other.transactionID)"}"#).status == 200)
            let asked = try #require(simulator.notification("CONSUMPTION_REQUEST", transactionID: other.transactionID))
            #expect(try await post(port, "/v1/notifications/apple", #"{"signedPayload":"\#(asked)"}"#).status == 200)
            await app.background.idle()
            #expect(simulator.serverAPI.consumptionAnswers.count == 1)
            #expect(simulator.serverAPI.consumptionAnswers.first?.transactionID == other.transactionID)
        }
    }

    @Test func consumptionRequestsAreOnlyStoredWhenDisabled() async throws {
        try await withClockedService(configuration: configuration()) { app, port, _, _ in
            let simulator = try #require(app.appStore)
            let bought = simulator.purchase(.activeMonthly, tag: "off")
            #expect(
                try await postReceipts(port, #"{"app_user_id":"off","transaction_id":"\#(bought.transactionID)"}"#).status == 200)
            let request = try #require(simulator.notification("CONSUMPTION_REQUEST", transactionID: bought.transactionID))
            #expect(try await post(port, "/v1/notifications/apple", #"{"signedPayload":"\#(request)"}"#).status == 200)
            await app.background.idle()
            #expect(simulator.serverAPI.consumptionAnswers.isEmpty)
        }
    }

    /// A refund request, receiptd's answer and Apple's decline, charted by the month it was asked
    /// in (from the transactions and from the rollups, which agree), drilled into, and gone with
    /// an erasure of its holder.
    @Test func aRefundRequestIsChartedWithItsAnswerAndAppleDecision() async throws {
        try await withClockedService(configuration: configuration(consumption: true)) { app, port, db, clock in
            let simulator = try #require(app.appStore)
            let bought = simulator.purchase(.activeMonthly, tag: "asks")
            #expect(
                try await postReceipts(port, #"{"app_user_id":"asa","transaction_id":"\#(bought.transactionID)"}"#).status == 200)
            let asked = clock.now
            let asking = try #require(
                simulator.notification("CONSUMPTION_REQUEST", transactionID: bought.transactionID, reason: "FULFILLMENT_ISSUE"))
            #expect(try await post(port, "/v1/notifications/apple", #"{"signedPayload":"\#(asking)"}"#).status == 200)
            await app.background.idle()
            clock.advance(by: day)
            let declined = try #require(simulator.notification("REFUND_DECLINED", transactionID: bought.transactionID))
            #expect(try await post(port, "/v1/notifications/apple", #"{"signedPayload":"\#(declined)"}"#).status == 200)
            // The day it was asked, by day.
            let (askedDay, nextDay) = (
                String(CivilTime.rfc3339(asked).prefix(10)), String(CivilTime.rfc3339(asked + day).prefix(10))
            )
            let from = "from=\(askedDay)&to=\(nextDay)"
            func figures() async throws -> (source: String?, values: [String: Any]) {
                let r = try await get(port, "/v1/admin/charts/refund_requests?\(from)", key: TestSecrets.secretKey)
                #expect(r.status == 200, "\(r.body)")
                return (r.json["source"] as? String, (r.json["values"] as? [[String: Any]])?.first ?? [:])
            }
            let read = try await figures()
            #expect(read.source == "transactions")
            for (measure, value) in [("requests", 1), ("answered", 1), ("answered_in_time", 1), ("declined", 1)] {
                #expect(read.values[measure] as? Int == value, "\(measure): \(read.values)")
            }
            #expect(read.values["granted"] as? Int == 0 && read.values["no_resolution"] as? Int == 0)
            try await app.rollups.catchUp()
            let kept = try await figures()
            #expect(kept.source == "rollups")
            for measure in ["requests", "answered", "answered_in_time", "declined", "granted", "no_resolution"] {
                #expect(kept.values[measure] as? Int == read.values[measure] as? Int, "\(measure): \(kept.values)")
            }
            let drill = try await get(
                port, "/v1/admin/charts/refund_requests/drill?\(from)&period=\(askedDay)&measure=requests",
                key: TestSecrets.secretKey)
            let contributions = drill.json["contributions"] as? [[String: Any]] ?? []
            #expect(contributions.map { $0["app_user_id"] as? String } == ["asa"], "\(drill.body)")
            #expect(contributions.first?["detail"] as? String == "sent")
            // Split by the customer's reason, as Apple stated it; no other chart has reasons.
            let byReason = try await get(
                port, "/v1/admin/charts/refund_requests?\(from)&group_by=reason", key: TestSecrets.secretKey)
            let groups = byReason.json["groups"] as? [[String: Any]] ?? []
            #expect(groups.map { $0["group"] as? String } == ["FULFILLMENT_ISSUE"], "\(byReason.body)")
            let revenue = try await get(port, "/v1/admin/charts/revenue?group_by=reason", key: TestSecrets.secretKey)
            #expect(revenue.status == 400, "\(revenue.body)")
            // Erased: the requests go with the purchase.
            #expect(try await request(port, "DELETE", "/v1/subscribers/asa", key: TestSecrets.secretKey).status == 200)
            #expect(try TestDatabase.open(db).scalarInt("SELECT count(*) FROM refund_requests") == 0)
            try await app.rollups.catchUp()
            #expect(try await figures().values["requests"] as? Int == 0)
        }
    }
}
