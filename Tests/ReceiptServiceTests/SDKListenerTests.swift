import Entitlements
import Foundation
import HTTPServer
import JSON
import ReceiptCore
import ReceiptTesting
import RevenueCatProtocol
import Testing

@testable import ReceiptService

/// The listener RevenueCat's SDKs reach with `proxyURL`: every answer decoded as both SDKs decode
/// it (SDKConformance), over the same facts as receiptd's own API (on SQLite, and on PostgreSQL
/// in the PostgreSQL run of this suite).
@Suite("RevenueCat SDK listener")
struct SDKListenerTests {
    static let appleKey = "appl_test_key"
    static let playKey = "goog_test_key"
    static let anonymous = "$RCAnonymousID:0123456789abcdef0123456789abcdef"

    /// The test configuration with the listener on a free port and Config/offerings.json.
    static func configuration(_ path: String) -> ServiceConfiguration {
        var configuration = testConfiguration(path: path)
        let offerings = try! Offerings(
            json: Array(FileManager.default.contents(atPath: configDirectory + "/offerings.json")!),
            catalog: Catalog(["lifetime": .nonConsumable, "coins_100": .consumable]))
        configuration.revenueCat = .init(port: 0, keys: [appleKey, playKey], offerings: offerings)
        return configuration
    }

    /// The JSON of a reply's body.
    static func json(_ reply: Reply) throws -> JSONValue { try JSONValue.parse(Array(reply.body.utf8)) }

    /// A header of a reply, by name (any case).
    static func header(_ reply: Reply, _ name: String) -> String? {
        for line in reply.head.split(separator: "\r\n") {
            let parts = line.split(separator: ":", maxSplits: 1)
            if parts.count == 2, parts[0].lowercased() == name.lowercased() {
                return parts[1].trimmingCharacters(in: .whitespaces)
            }
        }
        return nil
    }

    /// GET `path` on the listener as the SDK does, with `key`.
    static func sdkGet(_ port: Int, _ path: String, key: String? = appleKey, etag: String = "") async throws -> Reply {
        try await get(port, path, key: key, headers: "X-RevenueCat-ETag: \(etag)\r\n")
    }

    /// `reply` decodes as `what` in `sdks` (a customer's info in both: one person may use both).
    static func expectDecodes(
        _ reply: Reply, _ what: String = "CustomerInfo", sdks: [SDKConformance.SDK] = SDKConformance.SDK.allCases
    ) throws {
        let json = try json(reply)
        for sdk in sdks {
            let problems =
                what == "offerings" ? SDKConformance.offerings(json, sdk: sdk) : SDKConformance.customerInfo(json, sdk: sdk)
            #expect(problems == [], "\(reply.body)")
        }
        #expect(header(reply, "X-RevenueCat-Request-Time").flatMap { Int64($0) } != nil)
    }

    @Test func anUnknownCustomerExistsEmptyAndIsTaggedForTheSDKsCache() async throws {
        try await withClockedService(configuration: Self.configuration) { app, _, _, _ in
            let port = try #require(app.application.sdkServer?.port)
            // Android escapes `$` and `:`, iOS only `:`; both are the same id.
            for path in [
                "/v1/subscribers/%24RCAnonymousID%3A0123456789abcdef0123456789abcdef",
                "/v1/subscribers/$RCAnonymousID%3A0123456789abcdef0123456789abcdef",
            ] {
                let reply = try await Self.sdkGet(port, path)
                #expect(reply.status == 200, "\(reply.body)")
                try Self.expectDecodes(reply)
                #expect(try Self.json(reply)["subscriber"]?["original_app_user_id"] == .string(Self.anonymous))
                let tag = try #require(Self.header(reply, "X-RevenueCat-ETag"))
                let again = try await Self.sdkGet(port, path, etag: tag)
                #expect(again.status == 304 && again.body.isEmpty && Self.header(again, "X-RevenueCat-ETag") == tag)
            }
        }
    }

    @Test func onlyTheAppsSDKKeysOpenIt() async throws {
        try await withClockedService(configuration: Self.configuration) { app, _, _, _ in
            let port = try #require(app.application.sdkServer?.port)
            for key in [nil, TestSecrets.publicKey, TestSecrets.secretKey, "appl_another"] {
                let reply = try await Self.sdkGet(port, "/v1/subscribers/u", key: key)
                #expect(reply.status == 401)
                #expect(try Self.json(reply)["code"] == .int(7225))
                #expect(SDKConformance.error(try Self.json(reply), contentType: Self.header(reply, "Content-Type")) == [])
            }
        }
    }

    /// One person, one set of facts: a purchase posted to receiptd's own API is in the SDK's
    /// CustomerInfo, which names no store identifier.
    @Test func aPurchaseThroughTheOwnAPIIsTheSDKsEntitlement() async throws {
        try await withClockedService(configuration: Self.configuration) { app, apiPort, _, _ in
            let port = try #require(app.application.sdkServer?.port)
            let posted = try await postReceipts(apiPort, receiptBody(user: Self.anonymous, "active_monthly:sdk1"))
            #expect(posted.status == 200, "\(posted.body)")
            let reply = try await Self.sdkGet(port, "/v1/subscribers/$RCAnonymousID%3A0123456789abcdef0123456789abcdef")
            try Self.expectDecodes(reply)
            let premium = try #require(try Self.json(reply)["subscriber"]?["entitlements"]?["premium"])
            #expect(premium["product_identifier"] == .string("monthly"))
            let transactions = try #require(posted.json["subscriptions"] as? [String: [String: Any]])
            for (_, s) in transactions {
                for key in ["original_transaction_id", "store_transaction_id"] {
                    let id = try #require(s[key] as? String)
                    #expect(!reply.body.contains(id))
                }
            }
        }
    }

    /// logIn: an anonymous customer's purchases go with them to the id they log in as (201: new);
    /// an id anyone could type is never merged by an app's key.
    @Test func logInTakesAnAnonymousCustomersPurchasesAndNobodyElses() async throws {
        try await withClockedService(configuration: Self.configuration) { app, apiPort, _, _ in
            let port = try #require(app.application.sdkServer?.port)
            _ = try await postReceipts(apiPort, receiptBody(user: Self.anonymous, "active_monthly:sdk2"))
            func identify(_ from: String, _ to: String) async throws -> Reply {
                try await post(
                    port, "/v1/subscribers/identify", #"{"app_user_id":"\#(from)","new_app_user_id":"\#(to)"}"#,
                    key: Self.appleKey)
            }
            let created = try await identify(Self.anonymous, "alice")
            #expect(created.status == 201, "\(created.body)")
            try Self.expectDecodes(created)
            #expect(try Self.json(created)["subscriber"]?["entitlements"]?["premium"] != nil)
            let again = try await identify(Self.anonymous, "alice")
            #expect(again.status == 200)
            // bob holds a purchase; logging in from "bob" as "eve" moves nothing.
            _ = try await postReceipts(apiPort, receiptBody(user: "bob", "active_monthly:sdk3"))
            let eve = try await identify("bob", "eve")
            #expect(eve.status == 201)
            #expect(try Self.json(eve)["subscriber"]?["entitlements"] == .object([:]))
            let bob = try await Self.sdkGet(port, "/v1/subscribers/bob")
            #expect(try Self.json(bob)["subscriber"]?["entitlements"]?["premium"] != nil)
            // Android's older createAlias keeps the same rule.
            let other = "$RCAnonymousID:ffffffffffffffffffffffffffffffff"
            _ = try await postReceipts(apiPort, receiptBody(user: other, "non_consumable:sdk4"))
            let aliased = try await post(
                port, "/v1/subscribers/$RCAnonymousID%3Affffffffffffffffffffffffffffffff/alias", #"{"new_app_user_id":"dora"}"#,
                key: Self.playKey)
            #expect(aliased.status == 200 && aliased.body == "{}")
            #expect(
                try Self.json(try await Self.sdkGet(port, "/v1/subscribers/dora"))["subscriber"]?["non_subscriptions"]?[
                    "lifetime"] != nil)
            let typed = try await post(port, "/v1/subscribers/bob/alias", #"{"new_app_user_id":"mallory"}"#, key: Self.playKey)
            #expect(typed.status == 200)
            #expect(
                try Self.json(try await Self.sdkGet(port, "/v1/subscribers/mallory"))["subscriber"]?["entitlements"]
                    == .object([:]))
            let empty = try await post(port, "/v1/subscribers/identify", #"{"app_user_id":"a"}"#, key: Self.appleKey)
            #expect(empty.status == 400)
            #expect(try Self.json(empty)["code"] == .int(7220))
        }
    }

    @Test func eachStoreGetsItsOwnOfferingsAndMapping() async throws {
        try await withClockedService(configuration: Self.configuration) { app, apiPort, _, _ in
            let port = try #require(app.application.sdkServer?.port)
            // Support sees both stores' (the console's Offerings page).
            let admin = try await get(apiPort, "/v1/admin/offerings", key: TestSecrets.secretKey)
            #expect(admin.status == 200 && admin.json["current"] as? String == "default")
            let play = admin.json["play_store"] as? [[String: Any]] ?? []
            #expect(
                ((play.first?["packages"] as? [[String: Any]])?.first?["platform_product_plan_identifier"]) as? String
                    == "monthly")
            for key in [Self.appleKey, Self.playKey] {
                let offerings = try await Self.sdkGet(port, "/v1/subscribers/u/offerings", key: key)
                #expect(offerings.status == 200)
                // An app on the App Store runs the iOS SDK; one on Google Play, the Android SDK.
                try Self.expectDecodes(offerings, "offerings", sdks: key == Self.playKey ? [.android] : [.ios])
                let monthly = try Self.json(offerings)["offerings"]?.array?.first?["packages"]?.array?.first
                #expect((monthly?["platform_product_plan_identifier"] != nil) == (key == Self.playKey))
                let mapping = try await Self.sdkGet(port, "/v1/product_entitlement_mapping", key: key)
                #expect(SDKConformance.entitlementMapping(try Self.json(mapping)) == [])
            }
        }
    }

    @Test func whatTheSDKsCallBesideIsAnsweredQuietly() async throws {
        try await withClockedService(configuration: Self.configuration) { app, _, _, _ in
            let port = try #require(app.application.sdkServer?.port)
            let config = try await post(port, "/v1/config/app", "{}", key: Self.appleKey)
            #expect(config.status == 404)
            let refusal = try Self.json(config)
            #expect(SDKConformance.error(refusal, contentType: "application/json") == [])
            #expect(try await post(port, "/v1/events", #"{"events":[]}"#, key: Self.appleKey).status == 200)
            #expect(try await get(port, "/v1/health").status == 200)
            let unknown = try await Self.sdkGet(port, "/v1/nothing/here")
            #expect(unknown.status == 404)
            #expect(try Self.json(unknown)["code"]?.int64 != nil)
        }
    }

    /// The answer kept for the event loop is the answer, and a write ends it at once.
    @Test func aKeptAnswerIsTheSameAnswerAndAWriteEndsIt() async throws {
        try await withClockedService(configuration: Self.configuration) { app, apiPort, _, clock in
            let port = try #require(app.application.sdkServer?.port)
            _ = try await postReceipts(apiPort, receiptBody(user: "kept", "active_monthly:kept1"))
            let first = try await Self.sdkGet(port, "/v1/subscribers/kept")  // read, and kept
            clock.advance(by: 1_000)
            let second = try await Self.sdkGet(port, "/v1/subscribers/kept")  // from what was kept
            #expect(try Self.json(first)["subscriber"] == (try Self.json(second)["subscriber"]))
            #expect(Self.header(first, "X-RevenueCat-ETag") == Self.header(second, "X-RevenueCat-ETag"))
            #expect(
                try Self.json(second)["request_date_ms"]?.int64
                    == (try Self.json(first)["request_date_ms"]?.int64).map { $0 + 1_000 })
            try Self.expectDecodes(second)
            // A purchase of another product: the next answer has it, not the kept one.
            _ = try await postReceipts(apiPort, receiptBody(user: "kept", "non_consumable:kept2"))
            let third = try await Self.sdkGet(port, "/v1/subscribers/kept")
            #expect(try Self.json(third)["subscriber"]?["non_subscriptions"]?["lifetime"] != nil, "\(third.body)")
        }
    }
}
