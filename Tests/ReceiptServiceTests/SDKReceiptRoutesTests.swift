import AppStore
import Entitlements
import Foundation
import HTTPServer
import JSON
import ReceiptCore
import ReceiptTesting
import RevenueCatProtocol
import Testing

@testable import ReceiptService

/// `POST /v1/receipts` as RevenueCat's SDKs send it, through receiptd's own use cases: a StoreKit 1
/// receipt, a StoreKit 2 signed transaction, a sync with only the AppTransaction, a Play token
/// (the package from `X-Client-Bundle-ID`); 4xx only for what no retry could change.
@Suite("RevenueCat SDK purchases")
struct SDKReceiptRoutesTests {
    typealias Listener = SDKListenerTests

    /// The listener's configuration with Apple's test PKI, the Play simulator, consumable coins.
    static func configuration(policy: String) -> (String) -> ServiceConfiguration {
        { path in
            var c = Listener.configuration(path)
            let listener = c.revenueCat
            c = testConfiguration(
                path: path, policy: policy, signedData: .init(roots: [TestPKI.root], appAppleIDs: [1234]), googlePlay: true)
            c.revenueCat = listener
            c.catalog = Catalog(["lifetime": .nonConsumable, "coins_100": .consumable])
            return c
        }
    }

    /// POST `body` (JSON text) to the listener's /v1/receipts with `key`.
    static func postReceipt(_ port: Int, _ body: String, key: String = Listener.appleKey, headers: String = "") async throws
        -> Reply
    {
        try await request(port, "POST", "/v1/receipts", body, key: key, headers: headers)
    }

    /// A StoreKit 2 subscription transaction signed with Apple's test PKI.
    static func signedTransaction(_ id: String) throws -> String {
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        return try TestPKI.signer.sign(
            .object(strings: [
                "transactionId": .string(id), "originalTransactionId": .string(id), "bundleId": .string("com.example.app"),
                "productId": .string("monthly"), "purchaseDate": .int(now - 86_400_000),
                "originalPurchaseDate": .int(now - 86_400_000), "expiresDate": .int(now + 29 * 86_400_000),
                "type": .string("Auto-Renewable Subscription"), "inAppOwnershipType": .string("PURCHASED"),
                "environment": .string("Sandbox"), "transactionReason": .string("PURCHASE"), "signedDate": .int(now),
            ]))
    }

    @Test func aStoreKit1ReceiptAndAStoreKit2TransactionBecomeTheCustomersEntitlement() async throws {
        try await withClockedService(configuration: Self.configuration(policy: "transfer")) { app, _, _, _ in
            let port = try #require(app.application.sdkServer?.port)
            let receipt = try await Self.postReceipt(
                port,
                #"{"app_user_id":"\#(Listener.anonymous)","fetch_token":"\#(simulatedReceipt("active_monthly:sk1"))","is_restore":false,"observer_mode":false,"initiation_source":"purchase","payload_version":1,"price":"4.99","currency":"USD","product_id":"monthly"}"#
            )
            #expect(receipt.status == 200, "\(receipt.body)")
            try Listener.expectDecodes(receipt)
            #expect(
                try Listener.json(receipt)["subscriber"]?["entitlements"]?["premium"]?["product_identifier"] == .string("monthly")
            )
            let jws = try Self.signedTransaction("880000000000001")
            let signed = try await Self.postReceipt(
                port, #"{"app_user_id":"sk2user","fetch_token":"\#(jws)","is_restore":false}"#)
            #expect(signed.status == 200, "\(signed.body)")
            try Listener.expectDecodes(signed)
            #expect(try Listener.json(signed)["subscriber"]?["entitlements"]?["premium"] != nil)
            #expect(!signed.body.contains("880000000000001"))
        }
    }

    /// What no retry changes is a 4xx (the SDK then finishes the transaction); nothing else is.
    @Test func aProofTheStoreRefusesIsA4xxAndAPurchaseHeldElsewhereIs7102UnderKeep() async throws {
        try await withClockedService(configuration: Self.configuration(policy: "keep")) { app, _, _, _ in
            let port = try #require(app.application.sdkServer?.port)
            // 21003: Apple says the receipt is not authentic. 21002 may be a passing problem: a 5xx.
            let bad = try await Self.postReceipt(
                port, #"{"app_user_id":"u1","fetch_token":"\#(simulatedReceipt("status_21003:x"))"}"#)
            #expect((400..<500).contains(bad.status), "\(bad.body)")
            let passing = try await Self.postReceipt(
                port, #"{"app_user_id":"u1","fetch_token":"\#(simulatedReceipt("status_21002:x"))"}"#)
            #expect(passing.status >= 500, "\(passing.body)")
            #expect(SDKConformance.error(try Listener.json(bad), contentType: Listener.header(bad, "Content-Type")) == [])
            let token = simulatedReceipt("active_monthly:held")
            #expect(try await Self.postReceipt(port, #"{"app_user_id":"first","fetch_token":"\#(token)"}"#).status == 200)
            let second = try await Self.postReceipt(
                port, #"{"app_user_id":"second","fetch_token":"\#(token)","is_restore":true}"#)
            #expect(second.status == 400, "\(second.body)")
            #expect(try Listener.json(second)["code"] == .int(7102))
            let nothing = try await Self.postReceipt(port, #"{"app_user_id":"u2"}"#)
            #expect(nothing.status == 400)
            #expect(try Listener.json(nothing)["code"] == .int(7103))
        }
    }

    /// Under `transfer`, a restore on a second device moves the purchase to the id it posts for.
    @Test func aRestoreOnASecondDeviceMovesThePurchaseUnderTransfer() async throws {
        try await withClockedService(configuration: Self.configuration(policy: "transfer")) { app, _, _, _ in
            let port = try #require(app.application.sdkServer?.port)
            let token = simulatedReceipt("active_monthly:restore")
            #expect(try await Self.postReceipt(port, #"{"app_user_id":"phone","fetch_token":"\#(token)"}"#).status == 200)
            let restored = try await Self.postReceipt(
                port, #"{"app_user_id":"tablet","fetch_token":"\#(token)","is_restore":true}"#)
            #expect(restored.status == 200)
            #expect(try Listener.json(restored)["subscriber"]?["entitlements"]?["premium"] != nil)
            let phone = try await Listener.sdkGet(port, "/v1/subscribers/phone")
            #expect(try Listener.json(phone)["subscriber"]?["entitlements"] == .object([:]))
        }
    }

    @Test func aSyncWithOnlyTheAppTransactionIsTakenAndAnsweredWithTheCustomer() async throws {
        try await withClockedService(configuration: Self.configuration(policy: "transfer")) { app, _, _, _ in
            let port = try #require(app.application.sdkServer?.port)
            let reply = try await Self.postReceipt(
                port,
                #"{"app_user_id":"syncer","app_transaction":"\#(try OfferTests.appTransaction("5150"))","is_restore":false}"#)
            #expect(reply.status == 200, "\(reply.body)")
            try Listener.expectDecodes(reply)
        }
    }

    /// Android: a Play token for the package the header names; a consumable is the SDK's to consume.
    @Test func aPlayTokenForThePackageInTheHeaderAndShouldConsumeForConsumables() async throws {
        try await withClockedService(configuration: Self.configuration(policy: "transfer")) { app, _, _, _ in
            let port = try #require(app.application.sdkServer?.port)
            let package = "X-Client-Bundle-ID: com.example.app\r\n"
            let subscription = try await Self.postReceipt(
                port, #"{"app_user_id":"droid","fetch_token":"gp1.active.sdk","product_ids":["monthly"],"is_restore":false}"#,
                key: Listener.playKey, headers: package)
            #expect(subscription.status == 200, "\(subscription.body)")
            try Listener.expectDecodes(subscription)
            #expect(try Listener.json(subscription)["purchased_products"]?["monthly"]?["should_consume"] == .bool(false))
            #expect(!subscription.body.contains("gp1.active.sdk"))
            let coins = try await Self.postReceipt(
                port, #"{"app_user_id":"droid","fetch_token":"gp1.coins.sdk","product_ids":["coins_100"]}"#,
                key: Listener.playKey, headers: package)
            #expect(coins.status == 200, "\(coins.body)")
            #expect(try Listener.json(coins)["purchased_products"]?["coins_100"]?["should_consume"] == .bool(true))
            let noPackage = try await Self.postReceipt(
                port, #"{"app_user_id":"droid","fetch_token":"gp1.active.sdk2","product_ids":["monthly"]}"#,
                key: Listener.playKey)
            #expect(noPackage.status == 400)
            #expect(try Listener.json(noPackage)["code"] == .int(7230))
        }
    }
}

extension SDKReceiptRoutesTests {
    /// Attributes alone or with a purchase: stored per person, each refused on its own, exported
    /// and erased with the person; a purchase never fails for its attributes.
    @Test func attributesAreKeptExportedAndErasedWithThePerson() async throws {
        try await withClockedService(configuration: Self.configuration(policy: "transfer")) { app, apiPort, _, _ in
            let port = try #require(app.application.sdkServer?.port)
            let posted = try await request(
                port, "POST", "/v1/subscribers/attr/attributes",
                #"{"attributes":{"$email":{"value":"nope","updated_at_ms":1},"$displayName":{"value":"Ana","updated_at_ms":1}}}"#,
                key: Listener.appleKey)
            #expect(posted.status == 400, "\(posted.body)")
            let refusal = try Listener.json(posted)
            #expect(refusal["code"] == .int(7263))
            #expect(
                refusal["attribute_errors"]
                    == .array([
                        .object(["key_name": .string("$email"), "message": .string("Email address is not a valid email.")])
                    ]))
            let purchase = try await Self.postReceipt(
                port,
                #"{"app_user_id":"attr","fetch_token":"\#(simulatedReceipt("active_monthly:attr"))","attributes":{"$email":{"value":"ana@example.com","updated_at_ms":2},"bad":{"value":1,"updated_at_ms":2}}}"#
            )
            #expect(purchase.status == 200, "\(purchase.body)")
            #expect(try Listener.json(purchase)["attributes_error_response"]?["code"] == .int(7263))
            // Support reads them (the console's customer page), by name.
            let read = try await subscriber(apiPort, "attr", "/attributes")
            let listed = read.json["attributes"] as? [[String: Any]] ?? []
            #expect(listed.compactMap { $0["name"] as? String } == ["$displayName", "$email"])
            #expect(listed.last?["value"] as? String == "ana@example.com")
            #expect(try await subscriber(apiPort, "attr", "/attributes", key: TestSecrets.publicKey).status == 403)
            let export = try await subscriber(apiPort, "attr", "/export")
            let attributes = (export.json["tables"] as? [String: [[String: Any]]])?["attributes"] ?? []
            #expect(Set(attributes.compactMap { $0["name"] as? String }) == ["$displayName", "$email"])
            #expect(attributes.contains { $0["value"] as? String == "ana@example.com" })
            let erased = try await request(apiPort, "DELETE", "/v1/subscribers/attr", key: TestSecrets.secretKey)
            #expect(erased.status == 200)
            #expect(try await subscriber(apiPort, "attr", "/export").status == 404)
        }
    }
}

extension SDKReceiptRoutesTests {
    /// The requests purchases-ios sends, as its own snapshot tests recorded them, replayed with
    /// every header and member as recorded but the key, the app and the proof (the recorded ones
    /// are no receipt, no app and no JWS): read as the SDK means them.
    @Test(arguments: [
        ("iOS13-testPostsReceiptDataWithProductDataCorrectly.1.json", "fetch_token"),
        ("iOS13-testPostsReceiptDataWithAppTransactionAndNoReceiptCorrectly.1.json", "app_transaction"),
    ])
    func theSDKsOwnRecordedRequestsAreRead(file: String, proof: String) async throws {
        try await withClockedService(configuration: Self.configuration(policy: "transfer")) { app, apiPort, _, _ in
            let port = try #require(app.application.sdkServer?.port)
            let recorded = try JSONValue.parse(Fixtures.bytes("RevenueCat/" + file))
            guard case .object(let headers)? = recorded["headers"], case .object(var body)? = recorded["request"]?["body"] else {
                Issue.record("not a recorded request")
                return
            }
            body[Identifier(proof)] = .string(
                proof == "fetch_token" ? simulatedReceipt("active_monthly:snapshot") : try OfferTests.appTransaction("6161"))
            var lines = ""
            for (name, value) in headers.sorted(by: { $0.key.string < $1.key.string }) {
                switch name.string.lowercased() {
                case "authorization", "content-type": continue
                case "x-client-bundle-id": lines += "X-Client-Bundle-ID: com.example.app\r\n"
                default: lines += "\(name.string): \(value.string ?? "")\r\n"
                }
            }
            let reply = try await Self.postReceipt(
                port, String(decoding: JSONValue.object(body).jsonBytes, as: UTF8.self), headers: lines)
            #expect(reply.status == 200, "\(reply.body)")
            try Listener.expectDecodes(reply)
            #expect(try Listener.json(reply)["subscriber"]?["original_app_user_id"] == .string("user"))
            // The attribute it carried is the person's.
            let export = try await subscriber(apiPort, "user", "/export")
            let attributes = (export.json["tables"] as? [String: [[String: Any]]])?["attributes"] ?? []
            #expect(attributes.first?["name"] as? String == "$attConsentStatus")
        }
    }
}

extension SDKReceiptRoutesTests {
    /// `transfer`, and `limits.*` of one request per key and then next to none.
    static func oneRequestPerKey(_ path: String) -> ServiceConfiguration {
        var c = configuration(policy: "transfer")(path)
        c.limits = .init(perKey: 0.001, keyBurst: 1)
        return c
    }

    /// The bounds of `limits.*` hold on the SDK listener too, answered with a 5xx and `Retry-After`:
    /// Android marks a purchase answered with any 4xx (a 429 too) synced for good.
    @Test func tooManyPurchasesFromOneKeyAreAskedToComeBackNotRefused() async throws {
        try await withClockedService(configuration: Self.oneRequestPerKey) { app, _, _, _ in
            let port = try #require(app.application.sdkServer?.port)
            let first = try await Self.postReceipt(
                port, #"{"app_user_id":"rl","fetch_token":"\#(simulatedReceipt("active_monthly:rl1"))"}"#)
            #expect(first.status == 200, "\(first.body)")
            let second = try await Self.postReceipt(
                port, #"{"app_user_id":"rl","fetch_token":"\#(simulatedReceipt("active_monthly:rl2"))"}"#)
            #expect(second.status == 503, "\(second.body)")
            #expect(try Listener.json(second)["code"] == .int(7101))
            #expect(Listener.header(second, "Retry-After").flatMap { Int($0) } ?? 0 > 0)
        }
    }
}

extension SDKReceiptRoutesTests {
    /// Attributes have a budget of their own under `limits.*`: past it, 503 (kept by the SDKs to
    /// send again), and purchases are not held up by them.
    @Test func attributesHaveABudgetOfTheirOwn() async throws {
        try await withClockedService(configuration: Self.oneRequestPerKey) { app, _, _, _ in
            let port = try #require(app.application.sdkServer?.port)
            func attributes() async throws -> Reply {
                try await request(
                    port, "POST", "/v1/subscribers/ab/attributes", #"{"attributes":{"k":{"value":"v","updated_at_ms":1}}}"#,
                    key: Listener.appleKey)
            }
            #expect(try await attributes().status == 200)
            let limited = try await attributes()
            #expect(limited.status == 503 && Listener.header(limited, "Retry-After") != nil)
            let purchase = try await Self.postReceipt(
                port, #"{"app_user_id":"ab","fetch_token":"\#(simulatedReceipt("active_monthly:ab"))"}"#)
            #expect(purchase.status == 200, "\(purchase.body)")
        }
    }
}
