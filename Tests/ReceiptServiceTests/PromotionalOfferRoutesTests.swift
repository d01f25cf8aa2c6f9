import AppStore
import Crypto
import CustomerOffers
import Foundation
import HTTPServer
import JSON
import Offers
import ReceiptCore
import ReceiptTesting
import Testing

@testable import ReceiptService

/// iOS's offers through the SDK listener: signed by receiptd's offer rules, refused as the SDK's
/// `ineligibleError`, and StoreKit 1's introductory eligibility.
@Suite("RevenueCat SDK offers", .serialized)
struct PromotionalOfferRoutesTests {
    typealias Listener = SDKListenerTests

    static func configuration(_ path: String) -> ServiceConfiguration {
        var c = testConfiguration(path: path, signedData: .init(roots: [TestPKI.root], appAppleIDs: [1234]))
        c.revenueCat = Listener.configuration(path).revenueCat
        let credentials = OfferTests.credentials
        c.offers = .init(
            rules: OfferTests.rules,
            key: SignOffer.Key(keyID: credentials.keyID, issuerID: credentials.issuerID, key: credentials.key))
        return c
    }

    static func ask(_ port: Int, _ user: String, key: String = Listener.appleKey) async throws -> Reply {
        try await request(
            port, "POST", "/v1/offers",
            #"{"app_user_id":"\#(user)","fetch_token":"x","generate_offers":[{"offer_id":"WINBACK50","product_id":"monthly","subscription_group":"20000001"}]}"#,
            key: key)
    }

    @Test func aLapsedCustomerGetsTheSignatureOnceThenTheSDKsIneligibleError() async throws {
        try await withClockedService(configuration: Self.configuration) { app, apiPort, _, _ in
            let port = try #require(app.application.sdkServer?.port)
            #expect(try await postReceipt(apiPort, user: "lena", "expired_voluntary:sdk-lena").status == 200)
            let reply = try await Self.ask(port, "lena")
            #expect(reply.status == 200, "\(reply.body)")
            let offer = try #require(try Listener.json(reply)["offers"]?.array?.first)
            #expect(offer["key_id"] == .string(OfferTests.credentials.keyID) && offer["signature_error"] == .null)
            let data = try #require(offer["signature_data"])
            let nonce = try #require(data["nonce"]?.string)
            let timestamp = try #require(data["timestamp"]?.int64)
            let signature = try #require(data["signature"]?.string)
            let der = try #require(Data(base64Encoded: signature))
            // StoreKit 1 (no X-StoreKit2-Enabled): signed for applicationUsername, the app user id.
            let payload = PromotionalOfferSignature.payload(
                bundleID: "com.example.app", keyID: OfferTests.credentials.keyID, productID: "monthly", offerID: "WINBACK50",
                applicationUsername: "lena", nonce: nonce, timestamp: timestamp)
            #expect(
                OfferTests.credentials.key.publicKey.isValidSignature(
                    try P256.Signing.ECDSASignature(derRepresentation: der), for: Array(payload.utf8)))
            // Once a year (max_per_customer 1): the next ask is the SDK's ineligibleError, nothing signed.
            let again = try #require(try Listener.json(try await Self.ask(port, "lena"))["offers"]?.array?.first)
            #expect(again["signature_error"]?["code"] == .int(7232) && again["signature_data"] == .null)
            // An active subscriber is no lapsed one; a Play key has no promotional offers.
            #expect(try await postReceipt(apiPort, user: "ana", "active_monthly:sdk-ana").status == 200)
            let active = try #require(try Listener.json(try await Self.ask(port, "ana"))["offers"]?.array?.first)
            #expect(active["signature_error"]?["code"] == .int(7232))
            let play = try await Self.ask(port, "ana", key: Listener.playKey)
            #expect(play.status == 400)
            #expect(try Listener.json(play)["code"] == .int(7000))
        }
    }

    @Test func storeKit1sIntroductoryEligibilityComesFromTheStoredFacts() async throws {
        try await withClockedService(configuration: Self.configuration) { app, apiPort, _, _ in
            let port = try #require(app.application.sdkServer?.port)
            func eligibility(_ user: String) async throws -> JSONValue {
                let reply = try await request(
                    port, "POST", "/v1/subscribers/\(user)/intro_eligibility",
                    #"{"product_identifiers":["monthly","coins_100"],"fetch_token":"x"}"#, key: Listener.appleKey)
                #expect(reply.status == 200, "\(reply.body)")
                return try Listener.json(reply)
            }
            #expect(try await eligibility("newcomer") == .object(["monthly": .bool(true), "coins_100": .null]))
            // Apple: once per group per Apple Account; a free trial used is used.
            #expect(try await postReceipt(apiPort, user: "had", "trial:sdk-had").status == 200)
            #expect(try await eligibility("had")["monthly"] == .bool(false))
        }
    }
}
