import Foundation
import HTTPServer
import JSON
import ReceiptTesting
import Testing

@testable import ReceiptService

/// An app's life on RevenueCat's SDK against receiptd, in the order the SDK calls (on SQLite, and
/// on PostgreSQL in that run of this suite): configure, an anonymous customer, a purchase, logIn,
/// a restore on a second device, offerings, attributes, a promotional offer. Every answer decoded
/// as both SDKs decode it.
@Suite("RevenueCat SDK: an app's sequence")
struct SDKAppSequenceTests {
    typealias Listener = SDKListenerTests

    @Test func configurePurchaseLogInRestoreOfferingsAttributesOffer() async throws {
        try await withClockedService(configuration: PromotionalOfferRoutesTests.configuration) { app, _, _, _ in
            let port = try #require(app.application.sdkServer?.port)
            let key = Listener.appleKey
            let phone = "$RCAnonymousID:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
            let tablet = "$RCAnonymousID:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
            func path(_ id: String) -> String { id.replacingOccurrences(of: ":", with: "%3A") }
            func decoded(_ reply: Reply, _ status: Int = 200) throws -> JSONValue {
                #expect(reply.status == status, "\(reply.body)")
                return try Listener.json(reply)
            }
            // configure: the SDK reads its anonymous customer, empty.
            var info = try decoded(try await Listener.sdkGet(port, "/v1/subscribers/\(path(phone))"))
            #expect(info["subscriber"]?["entitlements"] == .object([:]))
            // purchase: StoreKit 1's receipt, posted by the SDK.
            let receipt = simulatedReceipt("active_monthly:sequence")
            let bought = try await request(
                port, "POST", "/v1/receipts",
                #"{"app_user_id":"\#(phone)","fetch_token":"\#(receipt)","is_restore":false,"initiation_source":"purchase"}"#,
                key: key)
            try Listener.expectDecodes(bought)
            #expect(try decoded(bought)["subscriber"]?["entitlements"]?["premium"] != nil)
            // logIn: the anonymous purchase goes with the customer to their id.
            let loggedIn = try await request(
                port, "POST", "/v1/subscribers/identify", #"{"app_user_id":"\#(phone)","new_app_user_id":"alice"}"#, key: key)
            info = try decoded(loggedIn, 201)
            #expect(info["subscriber"]?["entitlements"]?["premium"] != nil)
            // A second device: anonymous, then logIn as alice, then restore.
            _ = try decoded(try await Listener.sdkGet(port, "/v1/subscribers/\(path(tablet))"))
            let second = try await request(
                port, "POST", "/v1/subscribers/identify", #"{"app_user_id":"\#(tablet)","new_app_user_id":"alice"}"#, key: key)
            #expect(try decoded(second)["subscriber"]?["entitlements"]?["premium"] != nil)
            let restored = try await request(
                port, "POST", "/v1/receipts",
                #"{"app_user_id":"alice","fetch_token":"\#(receipt)","is_restore":true,"initiation_source":"restore"}"#, key: key)
            try Listener.expectDecodes(restored)
            #expect(try decoded(restored)["subscriber"]?["entitlements"]?["premium"]?["product_identifier"] == .string("monthly"))
            // offerings, then attributes, then a promotional offer (alice subscribes: not a lapsed customer).
            let offerings = try await Listener.sdkGet(port, "/v1/subscribers/alice/offerings")
            try Listener.expectDecodes(offerings, "offerings", sdks: [.ios])
            let attributes = try await request(
                port, "POST", "/v1/subscribers/alice/attributes",
                #"{"attributes":{"$email":{"value":"alice@example.com","updated_at_ms":1700000000000}}}"#, key: key)
            #expect(attributes.status == 200, "\(attributes.body)")
            let offer = try await PromotionalOfferRoutesTests.ask(port, "alice")
            #expect(try decoded(offer)["offers"]?.array?.first?["signature_error"]?["code"] == .int(7232))
            // One person throughout: the phone's and the tablet's ids read as alice.
            for id in [phone, tablet] {
                let read = try await Listener.sdkGet(port, "/v1/subscribers/\(path(id))")
                #expect(try decoded(read)["subscriber"]?["original_app_user_id"] == .string("alice"))
            }
        }
    }
}
