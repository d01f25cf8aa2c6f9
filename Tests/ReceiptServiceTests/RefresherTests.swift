import AppStore
import DatabaseEngine
import Foundation
import GooglePlaySimulator
import ReceiptTesting
import Resilience
import Storage
import Testing

@testable import ReceiptCore
@testable import ReceiptService

private let day: Int64 = 86_400_000
private let hour: Int64 = 3_600_000

private func premium(_ d: [String: Any]) -> [String: Any]? {
    (d["entitlements"] as? [String: Any])?["premium"] as? [String: Any]
}

private func eventTypes(_ port: Int, _ user: String) async throws -> [String] {
    (try await subscriber(port, user, "/events").json["events"] as? [[String: Any]] ?? []).compactMap { $0["type"] as? String }
}

/// A service on test clocks with the refresher's loop off (passes are run by the test).
private func withRefresher(
    breaker: CircuitBreaker.Policy = .init(), _ body: (TestApp, Int, String, TestClock) async throws -> Void
) async throws {
    var settings = Refresher.Settings()
    settings.maxPerSecond = 1000
    let configuration = { (path: String) in testConfiguration(path: path, breaker: breaker, refresher: settings) }
    try await withClockedService(configuration: configuration, body)
}

@Suite("Refresh policy")
struct RefreshPolicyTests {
    let policy = RefreshPolicy(
        jitterMs: 900_000, billingRetryRecheckMs: 6 * hour, lookbackMs: 60 * day, backoffMs: 60_000, maxBackoffMs: hour)

    func candidate(
        expires: Int64 = 1000 * day, checked: Int64? = nil, retry: Bool = false, grace: Int64? = nil, next: Int64? = nil
    ) -> RefreshCandidate {
        RefreshCandidate(
            originalTransactionID: "1000", holder: "u", expiresAt: expires, inBillingRetry: retry, gracePeriodExpiresAt: grace,
            lastCheckedAt: checked, failures: 0, nextAttemptAt: next)
    }

    @Test func anExpiryNotCheckedSinceIsDueShortlyAfterIt() {
        let jitter = policy.jitter("1000")
        #expect((0..<900_000).contains(jitter))
        #expect(policy.dueAt(candidate()) == 1000 * day + jitter)
        #expect(policy.dueAt(candidate(checked: 999 * day)) == 1000 * day + jitter)
        // Checked after the expiry (the app posted, or a refresh): nothing to learn.
        #expect(policy.dueAt(candidate(checked: 1000 * day + 1)) == nil)
    }

    @Test func billingRetryAndGraceAreAskedAgainRegularly() {
        let checked = 1001 * day
        #expect(policy.dueAt(candidate(checked: checked, retry: true)) == checked + 6 * hour)
        // Grace ending before the next regular check: at its end.
        let grace = checked + hour
        #expect(policy.dueAt(candidate(checked: checked, grace: grace)) == grace + policy.jitter("1000"))
        #expect(policy.dueAt(candidate(checked: grace + 1, grace: grace)) == grace + 1 + 6 * hour)
    }

    @Test func aBackoffPushesTheNextAttemptAndDoublesUpToItsMaximum() {
        #expect(policy.dueAt(candidate(next: 2000 * day)) == 2000 * day)
        #expect(
            (1...8).map { policy.backoff(failures: $0) } == [60_000, 120_000, 240_000, 480_000, 960_000, 1_920_000, hour, hour])
        #expect(policy.backoff(failures: 1000) == hour)
    }

    @Test func jitterIsStableAndSpreads() {
        let spread = Set((0..<200).map { policy.jitter("2000000\($0)") / 90_000 })
        #expect(spread.count == 10)
        #expect(policy.jitter("42") == policy.jitter("42"))
        #expect(RefreshPolicy(jitterMs: 0).jitter("42") == 0)
    }
}

@Suite("Refresher", .serialized)
struct RefresherTests {
    @Test func supportsRefreshFromAppleLearnsARenewalNow() async throws {
        try await withRefresher { _, port, _, clock in
            #expect(try await postReceipt(port, user: "rae", "renewing:rae").status == 200)
            let refresh = { (user: String, key: String) in
                try await post(port, "/v1/subscribers/\(user)/refresh", "", key: key)
            }
            let unchanged = try await refresh("rae", TestSecrets.secretKey)
            #expect(unchanged.status == 200, "\(unchanged.body)")
            let first = (unchanged.json["purchases"] as? [[String: Any]])?.first
            #expect(first?["outcome"] as? String == "unchanged", "\(unchanged.body)")
            // After the expiry Apple has a renewal: asking now stores it, no pass needed.
            clock.advance(by: 26 * day)
            #expect(premium(try await subscriber(port, "rae").json)?["active"] as? Bool == false)
            let renewed = try await refresh("rae", TestSecrets.secretKey)
            #expect((renewed.json["purchases"] as? [[String: Any]])?.first?["outcome"] as? String == "changed")
            #expect(premium(renewed.json["subscriber"] as? [String: Any] ?? [:])?["active"] as? Bool == true)
            #expect(try await eventTypes(port, "rae").contains("renewal"))
            #expect(try await refresh("rae", TestSecrets.publicKey).status == 403)
            #expect(try await refresh("nobody", TestSecrets.secretKey).errorCode == "subscriber_not_found")
        }
    }

    @Test func aRenewalIsLearnedAtExpiryWithItsEventsAndOnlyOnce() async throws {
        try await withRefresher { app, port, path, clock in
            #expect(try await postReceipt(port, user: "alice", "renewing:a").status == 200)
            let before = try #require(premium(try await subscriber(port, "alice").json)?["expires_at"] as? String)
            #expect(await app.refresher.runPass() == .init())
            clock.advance(by: 26 * day)  // past the expiry and its jitter
            #expect(premium(try await subscriber(port, "alice").json)?["active"] as? Bool == false)
            let pass = await app.refresher.runPass()
            #expect(pass == .init(due: 1, refreshed: 1, changed: 1), "\(pass)")
            let after = try await subscriber(port, "alice").json
            #expect(premium(after)?["active"] as? Bool == true)
            #expect((premium(after)?["expires_at"] as? String).map { $0 > before } == true)
            #expect(try await eventTypes(port, "alice").contains("renewal"))
            // Checked after the expiry: nothing more to ask until the next one.
            #expect(await app.refresher.runPass() == .init())
            let db = try TestDatabase.open(path)
            #expect(try db.scalarInt("SELECT count(*) FROM refresh_checks WHERE outcome = 'valid' AND failures = 0") == 1)
            #expect(try db.scalarInt("SELECT count(*) FROM verifications WHERE app_user_id = 'alice'") == 2)
        }
    }

    @Test func theScanReadsSliceBySliceAndMissesNone() async throws {
        try await withRefresher { app, port, _, clock async throws in
            for i in 0..<7 { #expect(try await postReceipt(port, user: "s\(i)", "renewing:s\(i)").status == 200) }
            #expect(try await postReceipt(port, user: "t", "downgrade_pending:t").status == 200)  // yearly: not due
            clock.advance(by: 26 * day)
            let pass = await app.refresher.runPass(slice: 2)
            #expect(pass == .init(due: 7, refreshed: 7, changed: 7), "\(pass)")
            #expect(await app.refresher.runPass(slice: 3) == .init())
        }
    }

    @Test func aCancelledSubscriptionIsCheckedOnceAfterItEnds() async throws {
        try await withRefresher { app, port, _, clock async throws in
            #expect(try await postReceipt(port, user: "carl", "cancelled:c").status == 200)
            clock.advance(by: 26 * day)
            #expect(await app.refresher.runPass() == .init(due: 1, refreshed: 1))
            #expect(try await eventTypes(port, "carl").contains("expiration"))
            clock.advance(by: 5 * day)
            #expect(await app.refresher.runPass() == .init())
        }
    }

    @Test func billingRetryIsAskedAgainUntilApplesRecoveryIsLearned() async throws {
        try await withRefresher { app, port, _, clock async throws in
            #expect(try await postReceipt(port, user: "bob", "billing_retry_recovers:b").status == 200)
            #expect(premium(try await subscriber(port, "bob").json)?["active"] as? Bool == false)
            clock.advance(by: 1 * hour)
            #expect(await app.refresher.runPass() == .init())
            clock.advance(by: 6 * hour)  // due again; Apple still retrying
            #expect(await app.refresher.runPass() == .init(due: 1, refreshed: 1))
            clock.advance(by: 2 * day)  // Apple recovered the payment meanwhile
            #expect(await app.refresher.runPass() == .init(due: 1, refreshed: 1, changed: 1))
            #expect(premium(try await subscriber(port, "bob").json)?["active"] as? Bool == true)
            #expect(try await eventTypes(port, "bob").contains("renewal"))
        }
    }

    @Test func appleDownChangesNothingAndBacksOff() async throws {
        try await withRefresher(breaker: .init(failureThreshold: 1, openFor: .seconds(3600))) { app, port, path, clock in
            #expect(try await postReceipt(port, user: "dora", "renewing:d").status == 200)
            #expect(try await postReceipt(port, user: "emil", "renewing:e").status == 200)
            // Apple's receipt server is down (21005): the breaker opens.
            #expect(try await postReceipt(port, user: "x", "status_21005:x").status == 503)
            clock.advance(by: 26 * day)
            let before = try tableSnapshot(path)
            let pass = await app.refresher.runPass()
            // The first fails fast on the open breaker; the second waits for the next pass.
            #expect(pass == .init(due: 2, unavailable: 1, skipped: 1), "\(pass)")
            #expect(try tableSnapshot(path) == before)
            let db = try TestDatabase.open(path)
            #expect(try db.scalarInt("SELECT failures FROM refresh_checks WHERE outcome = 'unavailable'") == 1)
            // Backing off: right after, only the untried one is due.
            #expect(await app.refresher.runPass().due == 1)
        }
    }

    @Test func aClaimHeldElsewhereIsLeftAlone() async throws {
        try await withRefresher { app, port, path, clock in
            #expect(try await postReceipt(port, user: "fay", "renewing:f").status == 200)
            clock.advance(by: 26 * day)
            // Another receiptd on the same database holds the claim.
            let db = try TestDatabase.open(path)
            let q = try db.prepare("SELECT original_transaction_id FROM latest_receipts")
            let original = try #require(try q.step() ? q.text(0) : nil)
            #expect(try RefreshStore(db).claim(original, now: clock.now, until: clock.now + hour))
            #expect(await app.refresher.runPass() == .init())
            clock.advance(by: hour)  // its claim ran out (that process died): taken over
            #expect(await app.refresher.runPass() == .init(due: 1, refreshed: 1, changed: 1))
        }
    }
}

/// A stored row whose times are not dates (written before dates were checked on entry,
/// or by hand) is skipped and reported by the refresher; everything else goes on, and the
/// subscriber it belongs to can still be read.
@Suite("Refresher and poisoned rows", .serialized)
struct RefresherPoisonedRowTests {
    @Test func aGraceDateAtInt64MaxIsSkippedAndReportedNotACrash() async throws {
        try await withRefresher { app, port, path, clock in
            #expect(try await postReceipt(port, user: "poisoned", "renewing:p").status == 200)
            #expect(try await postReceipt(port, user: "alice", "renewing:a").status == 200)
            try TestDatabase.open(path).prepare(
                """
                UPDATE pending_renewal_info SET grace_period_expires_date = 9223372036854775807, is_in_billing_retry_period = 1
                WHERE original_transaction_id IN (SELECT original_transaction_id FROM ownership WHERE app_user_id = 'poisoned')
                """
            ).run()
            clock.advance(by: 26 * day)
            for _ in 0..<2 {  // every pass skips it; the loop is not stopped by it
                let pass = await app.refresher.runPass()
                #expect(pass.unprocessable == 1, "\(pass)")
                #expect(pass.due <= 1)
            }
            let alice = try await subscriber(port, "alice").json
            #expect(premium(alice)?["active"] as? Bool == true)
            let poisoned = try await subscriber(port, "poisoned").json
            #expect(poisoned["app_user_id"] as? String == "poisoned")
        }
    }

    @Test func thePolicyNeverOverflowsWhateverTheRowHolds() {
        let policy = RefreshPolicy()
        for value in [Int64.max, Int64.max - 1, Int64.min, -1] {
            let c = RefreshCandidate(
                originalTransactionID: "o", holder: "u", expiresAt: value, inBillingRetry: true, gracePeriodExpiresAt: value,
                lastCheckedAt: nil, failures: Int.max, nextAttemptAt: value)
            #expect(!RefreshPolicy.isProcessable(c))
            _ = policy.dueAt(c)
            _ = policy.backoff(failures: Int.max)
        }
    }
}

@Suite("Refresher: Google Play subscriptions")
struct PlayRefresherTests {
    @Test func aRenewalWhoseNotificationWasLostIsFoundAfterTheExpiry() async throws {
        var settings = Refresher.Settings()
        settings.maxPerSecond = 1000
        let configuration = { (path: String) in testConfiguration(path: path, refresher: settings, googlePlay: true) }
        try await withClockedService(configuration: configuration) { app, port, _, clock in
            let google = try #require(app.googlePlay)
            let token = google.purchase(.renewing, tag: "lost")
            let body =
                #"{"app_user_id":"rita","store":"play_store","package_name":"com.example.app","purchase_token":"\#(token)"}"#
            #expect(try await postReceipts(port, body).status == 200)
            #expect(await app.refresher.runPass() == .init())  // not expired: nothing to ask
            // Google renews it; no notification comes. Past the expiry (and its jitter) the refresher asks.
            clock.advance(by: 26 * day)
            let pass = await app.refresher.runPass()
            #expect(pass == .init(due: 1, refreshed: 1, changed: 1), "\(pass)")
            #expect(google.calls["subscriptionsv2"] == 2)
            let stored = try await subscriber(port, "rita")
            let premium = entitlement(stored.json, "premium")
            #expect(premium?["active"] as? Bool == true && premium?["store"] as? String == "play_store")
            #expect(try await eventTypes(port, "rita").contains("renewal"))
            #expect(await app.refresher.runPass() == .init())  // checked since it expired
        }
    }

    @Test func aPausedSubscriptionIsAskedAboutAgainWhenItResumes() async throws {
        var settings = Refresher.Settings()
        settings.maxPerSecond = 1000
        let configuration = { (path: String) in testConfiguration(path: path, refresher: settings, googlePlay: true) }
        try await withClockedService(configuration: configuration) { app, port, _, clock in
            let google = try #require(app.googlePlay)
            let token = google.purchase(.paused, tag: "p")  // ended ten days ago; resumes in twenty
            let body =
                #"{"app_user_id":"pia","store":"play_store","package_name":"com.example.app","purchase_token":"\#(token)"}"#
            #expect(try await postReceipts(port, body).status == 200)
            #expect(await app.refresher.runPass() == .init())  // asked when posted, after the period ended
            clock.advance(by: 21 * day)
            let pass = await app.refresher.runPass()
            #expect(pass.due == 1 && pass.refreshed == 1, "\(pass)")
            #expect(google.calls["subscriptionsv2"] == 2)
        }
    }
}
