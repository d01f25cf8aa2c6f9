import Entitlements
import Foundation
import GooglePlaySimulator
import ReceiptService
import ReceiptTesting
import Testing

/// POST /v1/receipts with `"store": "play_store"`: the route, its refusals, and one person holding
/// purchases from both stores.
@Suite("Receipts API: Google Play purchases")
struct GooglePlayPurchaseTests {
    static func playBody(user: String, token: String, extra: String = "") -> String {
        #"{"app_user_id":"\#(user)","store":"play_store","package_name":"com.example.app","purchase_token":"\#(token)"\#(extra)}"#
    }

    static func errorCode(_ reply: Reply) -> String? { (reply.json["error"] as? [String: Any])?["code"] as? String }

    @Test func aPlayPurchaseIsPostedLikeAReceipt() async throws {
        try await withService(googlePlay: true) { port, db in
            let r = try await postReceipts(port, Self.playBody(user: "alice", token: "gp1.active.a"))
            #expect(r.status == 200, "\(r.body)")
            let premium = entitlement(r.json, "premium")
            #expect(premium?["active"] as? Bool == true && premium?["store"] as? String == "play_store")
            // Refusals: each with its code, nothing stored.
            let before = try tableSnapshot(db)
            for (body, status, code) in [
                (Self.playBody(user: "alice", token: "gp1.nothing.a"), 422, "invalid_purchase_token"),
                (Self.playBody(user: "alice", token: "a/b"), 400, "invalid_request"),
                (Self.playBody(user: "alice", token: "gp1.active.a", extra: #","receipt_data":"QUJD""#), 400, "invalid_request"),
                (#"{"app_user_id":"alice","store":"play_store","purchase_token":"gp1.active.a"}"#, 400, "invalid_request"),
                (#"{"app_user_id":"alice","store":"amazon","purchase_token":"x"}"#, 400, "invalid_request"),
                (
                    #"{"app_user_id":"alice","purchase_token":"gp1.active.a","package_name":"com.example.app"}"#, 400,
                    "invalid_request"
                ),
                (
                    #"{"app_user_id":"alice","store":"play_store","package_name":"com.other.app","purchase_token":"gp1.active.a"}"#,
                    422, "wrong_app"
                ),
            ] {
                let refused = try await postReceipts(port, body)
                #expect(refused.status == status && Self.errorCode(refused) == code, "\(body): \(refused.body)")
            }
            #expect(try tableSnapshot(db) == before)
            // Support finds the purchase by its Google order id, as by an Apple transaction id.
            let order = try #require(
                ((r.json["subscriptions"] as? [String: Any])?["monthly"] as? [String: Any])?["store_transaction_id"] as? String)
            let holding = try await request(port, "GET", "/v1/admin/transactions/\(order)", key: TestSecrets.secretKey)
            #expect(holding.status == 200 && holding.json["app_user_id"] as? String == "alice", "\(holding.body)")
            #expect(try await request(port, "GET", "/v1/admin/transactions/GPX.1", key: TestSecrets.secretKey).status == 400)
            // The console's overview shows the acknowledgement Google waits for (no worker runs here).
            let stats = try await request(port, "GET", "/v1/admin/stats", key: TestSecrets.secretKey)
            let play = stats.json["google_play"] as? [String: Any]
            #expect(
                play?["unacknowledged"] as? Int == 1 && play?["oldest_unacknowledged_seconds"] as? Int != nil, "\(stats.body)")
        }
    }

    /// Issue 57: a one-time product posted without `product_id` (or one not declared in
    /// products.json) is found: `subscriptionsv2` answers 400 for a token of another kind, and that
    /// too means "ask productsv2".
    @Test func aOneTimeProductWithoutItsProductIDIsFound() async throws {
        try await withService(googlePlay: true) { port, _ in
            let lifetime = try await postReceipts(port, Self.playBody(user: "lou", token: "gp1.lifetime.l"))
            #expect(lifetime.status == 200, "\(lifetime.body)")
            #expect(entitlement(lifetime.json, "premium")?["active"] as? Bool == true, "\(lifetime.body)")
            let coins = try await postReceipts(port, Self.playBody(user: "cal", token: "gp1.coins.c"))
            #expect(coins.status == 200 && coins.body.contains("coins_100"), "\(coins.body)")
            // A token Google knows under neither kind is still refused as such.
            let nothing = try await postReceipts(port, Self.playBody(user: "cal", token: "gp1.nothing.c"))
            #expect(nothing.status == 422 && Self.errorCode(nothing) == "invalid_purchase_token", "\(nothing.body)")
        }
    }

    @Test func withoutGooglePlayConfiguredAPlayPurchaseIsRefusedAsSuch() async throws {
        try await withService { port, _ in
            let r = try await postReceipts(port, Self.playBody(user: "alice", token: "gp1.active.a"))
            #expect(r.status == 501 && Self.errorCode(r) == "google_play_not_configured")
        }
    }

    @Test func onePersonHoldsBothStoresAndTheLongestActiveWins() async throws {
        try await withService(googlePlay: true) { port, _ in
            // An App Store monthly (25 days left), then a Google Play yearly (365 days).
            #expect(try await postReceipt(port, user: "carol", "active_monthly:c").status == 200)
            let both = try await postReceipts(port, Self.playBody(user: "carol", token: "gp1.upgraded.c"))
            let premium = entitlement(both.json, "premium")
            #expect(premium?["store"] as? String == "play_store" && premium?["product_id"] as? String == "yearly")
            let subscriptions = both.json["subscriptions"] as? [String: Any] ?? [:]
            #expect((subscriptions["monthly"] as? [String: Any])?["store"] as? String == "app_store")
            #expect((subscriptions["yearly"] as? [String: Any])?["store"] as? String == "play_store")
            let explained = try await post(
                port, "/v1/receipts?explain=true", Self.playBody(user: "carol", token: "gp1.upgraded.c"),
                key: TestSecrets.publicKey)
            let decision = ((entitlement(explained.json, "premium")?["explanation"]) as? [String: Any])?["decision"] as? String
            #expect(decision?.hasPrefix("Granted by the Google Play subscription of yearly") == true, "\(decision ?? "")")
        }
    }

    @Test func aPubSubPushIsAcknowledgedWith200AndAnUnauthenticatedOneRefused() async throws {
        let configuration: (String) -> ServiceConfiguration = { testConfiguration(path: $0, googlePlay: true) }
        try await withClockedService(configuration: configuration) { app, port, _, _ in
            let google = try #require(app.googlePlay)
            let token = google.purchase(.active, tag: "h")
            #expect(try await postReceipts(port, Self.playBody(user: "hana", token: token)).status == 200)
            let push = try #require(google.push(token, type: 2))
            let body = String(decoding: push.body, as: UTF8.self)
            let refused = try await post(port, "/v1/notifications/google", body)
            #expect(refused.status == 401 && Self.errorCode(refused) == "unauthenticated_push", "\(refused.body)")
            let oidc = String(push.authorization.dropFirst("Bearer ".count))
            let accepted = try await post(port, "/v1/notifications/google", body, key: oidc)
            #expect(accepted.status == 200 && accepted.json["outcome"] as? String == "unchanged", "\(accepted.body)")
            let again = try await post(port, "/v1/notifications/google", body, key: oidc)
            #expect(again.status == 200 && again.json["outcome"] as? String == "duplicate")
            let malformed = try await post(port, "/v1/notifications/google", #"{"message":{}}"#, key: oidc)
            #expect(malformed.status == 400 && Self.errorCode(malformed) == "invalid_request")
        }
    }

    @Test func playPricesReachTheChartsWithGooglesFee() async throws {
        try await withService(googlePlay: true) { port, _ in
            #expect(try await postReceipts(port, Self.playBody(user: "ivy", token: "gp1.active.chart")).status == 200)
            let today = String(CivilTime.rfc3339(Int64(Date().timeIntervalSince1970 * 1000) - 40 * 86_400_000).prefix(10))
            let query = "resolution=month&from=\(today)&currency=EUR"
            func values(_ chart: String, _ extra: String = "") async throws -> [[String: Any]] {
                let r = try await request(port, "GET", "/v1/admin/charts/\(chart)?\(query)\(extra)", key: TestSecrets.secretKey)
                #expect(r.status == 200, "\(r.body)")
                return r.json["values"] as? [[String: Any]] ?? []
            }
            // The simulator's monthly plan: 9.99 EUR (`recurringPrice` 9 units, 990000000 nanos).
            let revenue = try await values("revenue", "&store=play_store").filter { ($0["transactions"] as? Int ?? 0) > 0 }
            #expect(revenue.count == 1 && revenue.first?["gross"] as? String == "9.990", "\(revenue)")
            // Google's 15 % on a subscription from its first day: 9.990 × 0.85 = 8.4915.
            #expect(revenue.first?["proceeds"] as? String == "8.492", "\(revenue)")  // rounded half to even
            let apple = try await values("revenue", "&store=app_store")
            #expect(apple.allSatisfy { ($0["transactions"] as? Int ?? 0) == 0 })
            let mrr = try await values("mrr", "&store=play_store")
            #expect(mrr.last?["mrr"] as? String == "9.990", "\(mrr)")
        }
    }
}
