import DatabaseEngine
import Entitlements
import Foundation
import GooglePlay
import GooglePlaySimulator
import JSON
import Operations
import ReceiptService
import ReceiptTesting
import Storage
import Testing
import Workers

@testable import ReceiptCore

/// A Google Play purchase posted, end to end through the use case: the simulator stands in for
/// Google (its token endpoint checks receiptd's signed assertion), storage is real.
@Suite("Google Play purchases verified and stored")
struct VerifyPlayPurchaseTests {
    @Test func anActiveSubscriptionEntitlesAndIsStoredAsGooglePlays() async throws {
        try await PlayTesting.withPlay { app, clock in
            let token = app.googlePlay!.purchase(.active, tag: "a")
            let document = try await PlayTesting.post(app, "alice", token)
            let monthly = try #require(document["subscriptions"]?["monthly"])
            #expect(monthly["state"]?.string == "active" && monthly["store"]?.string == "play_store")
            #expect(monthly["active"] == .bool(true) && monthly["will_renew"] == .bool(true))
            #expect(monthly["original_transaction_id"]?.string == PurchaseTokenReference.of(token))
            #expect(monthly["store_transaction_id"]?.string?.hasPrefix("GPA.33") == true)
            #expect(monthly["price"]?["amount"]?.string == "9.990" && monthly["price"]?["currency"]?.string == "EUR")
            let premium = try #require(document["entitlements"]?["premium"])
            #expect(premium["active"] == .bool(true))
            #expect(
                document["entitlements"]?["premium"]?["explanation"]?["decision"]?.string?
                    .hasPrefix("Granted by the Google Play subscription of monthly") == true)
            // The token is kept once, by its reference; the acknowledgement Google waits for is queued.
            let stored = try await app.database.read { db in try PlayStore(db).token(PurchaseTokenReference.of(token)) }
            #expect(stored?.purchaseToken == token && stored?.chain == PurchaseTokenReference.of(token))
            #expect(try await app.database.read { db in try PlayStore(db).backlog().unacknowledged } == 1)
            // Google's raw JSON is kept: rederiving changes nothing.
            let report = try await app.database.write { db in
                try Rederivation(settings: app.configuration.entitlementSettings).run(db, now: clock.now, dryRun: true)
            }
            #expect(report.changed == 0 && report.unreadable == 0)
            // Posted again: nothing new, not a byte rewritten.
            let before = try tableSnapshot(app.database.runBlocking { $0 })
            #expect(try await PlayTesting.post(app, "alice", token)["version"] == document["version"])
            #expect(try tableSnapshot(app.database.runBlocking { $0 }) == before)
            // Erased: the token goes with her purchases, and nothing Google could be asked with is left.
            _ = try await app.eraseSubscriber("alice", by: "test")
            #expect(try await app.database.read { db in try PlayStore(db).token(PurchaseTokenReference.of(token)) } == nil)
            let texts = try tableSnapshot(app.database.runBlocking { $0 }).joined()
            #expect(!texts.contains(token))
        }
    }

    /// Every state Google states, as receiptd answers it.
    @Test(arguments: [
        (PlayScenario.trial, "active", true), (.intro, "active", true), (.canceled, "active", true),
        (.expired, "expired", false), (.gracePeriod, "grace_period", true), (.accountHold, "account_hold", false),
        (.paused, "paused", false), (.pending, "pending", false), (.pendingCanceled, "expired", false),
        (.installments, "active", true), (.priceIncrease, "active", true), (.test, "active", true),
    ])
    func eachStateIsDerivedAndExplained(scenario: PlayScenario, state: String, entitled: Bool) async throws {
        try await PlayTesting.withPlay { app, _ in
            let document = try await PlayTesting.post(app, "u", app.googlePlay!.purchase(scenario, tag: "s"))
            let monthly = try #require(document["subscriptions"]?["monthly"])
            #expect(monthly["store"]?.string == "play_store")
            #expect(monthly["state"]?.string == state)
            #expect(monthly["active"] == .bool(entitled))
            #expect(document["entitlements"]?["premium"]?["active"] == .bool(entitled))
            switch scenario {
            case .trial: #expect(monthly["period_type"]?.string == "trial" && monthly["offer"]?["type"]?.string == "free_trial")
            case .intro: #expect(monthly["period_type"]?.string == "intro")
            case .canceled: #expect(monthly["will_renew"] == .bool(false) && monthly["unsubscribe_detected_at"] != .null)
            case .expired: #expect(monthly["expiration_reason"]?.string == "customer_cancelled")
            case .gracePeriod: #expect(monthly["grace_period_expires_at"] != .null)
            case .accountHold: #expect(monthly["billing_issue_detected_at"] != .null && monthly["will_renew"] == .bool(true))
            case .paused: #expect(monthly["resumes_at"] != nil && monthly["resumes_at"] != .null)
            case .priceIncrease: #expect(monthly["price_increase"]?.string == "pending_consent")
            case .test: #expect(monthly["environment"]?.string == "sandbox")
            default: break
            }
            let decision = monthly["explanation"]?["decision"]?.string ?? ""
            #expect(!decision.contains("Apple"), "\(decision)")
        }
    }

    @Test func aPendingPaymentOwesNoAcknowledgementUntilPaidThenTheSamePurchaseIsOneSubscription() async throws {
        try await PlayTesting.withPlay { app, _ in
            let token = app.googlePlay!.purchase(.pending, tag: "p")
            _ = try await PlayTesting.post(app, "u", token)
            #expect(try await app.database.read { db in try PlayStore(db).backlog().unacknowledged } == 0)
            let events = try await app.readSubscriber.events("u", limit: 10, before: nil)
            #expect(events.events.isEmpty)
        }
    }

    @Test func aLinkedUpgradeIsOneSubscriptionWhicheverTokenComesFirst() async throws {
        for upgradedFirst in [false, true] {
            try await PlayTesting.withPlay { app, _ in
                let upgraded = app.googlePlay!.purchase(.upgraded, tag: "x")
                let replaced = PlayScenario.replaced.token(tag: "x")
                let order = upgradedFirst ? [upgraded, replaced] : [replaced, upgraded]
                var document = JSONValue.null
                for token in order { document = try await PlayTesting.post(app, "u", token) }
                let yearly = try #require(document["subscriptions"]?["yearly"])
                let monthly = try #require(document["subscriptions"]?["monthly"])
                #expect(yearly["state"]?.string == "active" && document["entitlements"]?["premium"]?["active"] == .bool(true))
                #expect(monthly["active"] == .bool(false))
                #expect(
                    yearly["original_transaction_id"] == monthly["original_transaction_id"], "upgraded first: \(upgradedFirst)")
                let kinds = try await app.readSubscriber.events("u", limit: 10, before: nil).events.map(\.type)
                #expect(kinds.contains("product_change"), "\(kinds)")
            }
        }
    }

    @Test func aRenewalSeenLaterBeginsWhereThePeriodBeforeEnded() async throws {
        try await PlayTesting.withPlay { app, clock in
            let token = app.googlePlay!.purchase(.renewing, tag: "r")
            let first = try await PlayTesting.post(app, "u", token)["subscriptions"]?["monthly"]
            clock.advance(by: 26 * PlayTesting.day)
            let second = try #require(try await PlayTesting.post(app, "u", token)["subscriptions"]?["monthly"])
            #expect(second["purchased_at"] == first?["expires_at"])
            #expect(second["store_transaction_id"]?.string == (first?["store_transaction_id"]?.string ?? "") + "..0")
            let events = try await app.readSubscriber.events("u", limit: 10, before: nil).events
            #expect(events.map(\.type).sorted() == ["initial_purchase", "renewal"])
            // Google Play's events say so in their facts (and so in every webhook's `event`).
            #expect(events.allSatisfy { $0.factsJSON.contains(#""store":"play_store""#) })
        }
    }

    @Test func oneTimeProductsAreNonSubscriptionsAndConsumablesConsumedWhenConfigured() async throws {
        try await PlayTesting.withPlay(consume: true) { app, _ in
            let lifetime = try await PlayTesting.post(
                app, "u", app.googlePlay!.purchase(.lifetime, tag: "l"), product: "lifetime")
            #expect(lifetime["non_subscriptions"]?["lifetime"]?.array?.first?["active"] == .bool(true))
            #expect(lifetime["non_subscriptions"]?["lifetime"]?.array?.first?["store"]?.string == "play_store")
            #expect(lifetime["entitlements"]?["premium"]?["active"] == .bool(true))
            let coins = app.googlePlay!.purchase(.coins, tag: "c")
            _ = try await PlayTesting.post(app, "u", coins)
            #expect(try await app.database.read { db in try PlayStore(db).backlog().unconsumed } == 1)
            await app.playAcknowledgements!.pass()
            #expect(app.googlePlay!.acknowledgement(of: coins)! == (true, true))
            // A pending one-time purchase states nothing yet.
            let pending = try await PlayTesting.post(app, "v", app.googlePlay!.purchase(.productPending, tag: "p"))
            #expect(pending["non_subscriptions"] == .object([:]) && pending["entitlements"] == .object([:]))
        }
    }

    @Test func refusalsAreTypedAndLoseNothing() async throws {
        try await PlayTesting.withPlay { app, clock in
            let token = app.googlePlay!.purchase(.active, tag: "a")
            _ = try await PlayTesting.post(app, "alice", token)
            let before = try tableSnapshot(app.database.runBlocking { $0 })
            func code(_ body: () async throws -> Void) async -> String? {
                do { try await body() } catch { return (error as? ReceiptError)?.code ?? "\(error)" }
                return nil
            }
            #expect(await code { _ = try await PlayTesting.post(app, "alice", "gp1.active") } == "invalid_purchase_token")
            #expect(await code { _ = try await PlayTesting.post(app, "alice", token, product: "yearly") } == "wrong_app")
            #expect(
                await code {
                    _ = try await app.verifyPlayPurchase(
                        .init(appUserID: "alice", packageName: "com.other", purchaseToken: token))
                } == "wrong_app")
            #expect(
                await code {
                    _ = try await app.verifyPlayPurchase(
                        .init(appUserID: "alice", packageName: "com.example.app", purchaseToken: "a/b"))
                } == "invalid_request")
            // Google down: what alice had is what she has, and the answer says so.
            app.googlePlay!.setOutage(milliseconds: 60_000)
            do {
                _ = try await PlayTesting.post(app, "alice", token)
                Issue.record("Google was down")
            } catch ReceiptError.storeUnavailable(.playStore, _, _, let lastKnown?) {
                let rendered = lastKnown.snapshot.document.rendered(version: 1, now: clock.now, explain: false)
                #expect(rendered["entitlements"]?["premium"]?["active"] == .bool(true))
            } catch {
                Issue.record("\(error)")
            }
            #expect(try tableSnapshot(app.database.runBlocking { $0 }) == before)
        }
    }
}
