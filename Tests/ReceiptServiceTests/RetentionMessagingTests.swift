import AppStore
import Crypto
import CustomerOffers
import DatabaseEngine
import Foundation
import JSON
import Offers
import ReceiptCore
import ReceiptService
import ReceiptTesting
import Retention
import Storage
import Testing

/// Apple's Retention Messaging real-time requests over HTTP: verified, decided, signed, recorded, counted.
@Suite("Retention Messaging API", .serialized)
struct RetentionMessagingTests {
    static let credentials = TestSecrets.serverAPICredentials
    static let (offerMessage, plainMessage) = (
        UUID(uuidString: "a4d2c6e8-1b3f-4a5c-9e7d-2f4b6a8c0e12")!, UUID(uuidString: "6b1f0d4e-2a57-4c1e-9d3b-8f0a7e5c2b10")!
    )

    static func withRetention(_ body: (TestApp, Int, String, TestClock) async throws -> Void) async throws {
        let configuration = { (path: String) -> ServiceConfiguration in
            var c = testConfiguration(path: path, signedData: .init(roots: [TestPKI.root], appAppleIDs: [1234]))
            c.offers = .init(
                rules: OfferRules(
                    groups: ["premium": ["monthly", "yearly"]],
                    offers: ["STAY": OfferRule(audience: .current, maxPerCustomer: 1, perDays: 365)]),
                key: SignOffer.Key(keyID: credentials.keyID, issuerID: credentials.issuerID, key: credentials.key))
            c.offers.retention = RetentionRules(rules: [
                RetentionRule(
                    name: "stay_offer", when: RetentionConditions(products: ["monthly"]),
                    answer: .promotionalOffer(message: offerMessage, offerID: "STAY", productID: nil, format: .v1)),
                RetentionRule(name: "everyone", answer: .message(plainMessage)),
            ])
            return c
        }
        try await withClockedService(configuration: configuration) { app, port, db, clock in
            try await body(app, port, db, clock)
        }
    }

    static func signedRequest(
        _ original: String, product: String = "monthly", id: String = UUID().uuidString.lowercased(), appleID: Int64 = 1234,
        at now: Int64
    ) throws -> String {
        let jws = try TestPKI.signer.sign(
            .object(strings: [
                "originalTransactionId": .string(original), "appAppleId": .int(appleID), "productId": .string(product),
                "userLocale": .string("en-US"), "requestIdentifier": .string(id), "signedDate": .int(now),
                "environment": .string("Production"),
            ]))
        return #"{"signedPayload":"\#(jws)"}"#
    }

    static func ask(_ port: Int, _ body: String) async throws -> Reply {
        try await post(port, "/v1/retention-messages/apple", body, key: nil)
    }

    /// Issue 57: the once-per-customer offer is decided and recorded in one transaction per
    /// customer, so Apple's requests arriving at once get it once.
    @Test func concurrentRequestsGiveAOncePerCustomerOfferOnce() async throws {
        try await Self.withRetention { _, port, db, clock in
            #expect(try await postReceipt(port, user: "rhea", "active_monthly:rhea").status == 200)
            let original = try #require(
                try TestDatabase.open(db).scalarText("SELECT original_transaction_id FROM ownership WHERE app_user_id = 'rhea'"))
            let now = clock.now
            let answers = try await withThrowingTaskGroup(of: Reply.self) { group in
                for _ in 0..<12 {
                    group.addTask { try await Self.ask(port, try Self.signedRequest(original, at: now)) }
                }
                return try await group.reduce(into: [Reply]()) { $0.append($1) }
            }
            #expect(answers.allSatisfy { $0.status == 200 }, "\(answers.map(\.body))")
            #expect(answers.filter { $0.json["promotionalOffer"] != nil }.count == 1, "\(answers.map(\.body))")
            let sql = try TestDatabase.open(db)
            #expect(try sql.scalarInt("SELECT count(*) FROM offer_signatures WHERE requested_by = 'apple_retention'") == 1)
            #expect(try sql.scalarInt("SELECT count(*) FROM retention_answers") == 12)
        }
    }

    @Test func aCustomerAboutToCancelIsOfferedOnceThenShownTheMessage() async throws {
        try await Self.withRetention { _, port, db, clock in
            #expect(try await postReceipt(port, user: "rita", "active_monthly:rita").status == 200)
            let original = try #require(
                try TestDatabase.open(db).scalarText("SELECT original_transaction_id FROM ownership WHERE app_user_id = 'rita'"))
            let first = UUID().uuidString.lowercased()
            let offered = try await Self.ask(port, try Self.signedRequest(original, id: first, at: clock.now))
            #expect(offered.status == 200, "\(offered.body)")
            let promotional = try #require(offered.json["promotionalOffer"] as? [String: Any], "\(offered.body)")
            #expect(promotional["messageIdentifier"] as? String == Self.offerMessage.uuidString.lowercased())
            let v1 = try #require(promotional["promotionalOfferSignatureV1"] as? [String: Any])
            #expect(v1["offerIdentifier"] as? String == "STAY" && v1["productId"] as? String == "monthly")
            #expect(v1["keyId"] as? String == Self.credentials.keyID)
            // The signature verifies over Apple's string with the key's public half.
            let signed = PromotionalOfferSignature.payload(
                bundleID: "com.example.app", keyID: Self.credentials.keyID, productID: "monthly", offerID: "STAY",
                applicationUsername: (v1["appAccountToken"] as? String) ?? "", nonce: v1["nonce"] as? String ?? "",
                timestamp: Int64(v1["timestamp"] as? Int ?? 0))
            let der = try #require(Data(base64Encoded: v1["encodedSignature"] as? String ?? ""))
            #expect(
                Self.credentials.key.publicKey.isValidSignature(
                    try P256.Signing.ECDSASignature(derRepresentation: der), for: Array(signed.utf8)))
            // Recorded with the decision, before the answer went out.
            let sql = try TestDatabase.open(db)
            #expect(try sql.scalarInt("SELECT count(*) FROM retention_answers") == 1)
            // Apple's retry of the same request: the same answer, nothing recorded or signed twice.
            let retried = try await Self.ask(port, try Self.signedRequest(original, id: first, at: clock.now))
            #expect(retried.status == 200 && retried.body == offered.body)
            #expect(try sql.scalarInt("SELECT count(*) FROM retention_answers") == 1)
            #expect(
                try sql.scalarInt("SELECT count(*) FROM offer_signatures WHERE requested_by = 'apple_retention'") == 1)
            // The next time the offer's own rule (once a year) says no: the message rule answers.
            let next = try await Self.ask(port, try Self.signedRequest(original, at: clock.now))
            #expect(try sql.scalarInt("SELECT count(*) FROM retention_answers") == 2)
            #expect(
                (next.json["message"] as? [String: Any])?["messageIdentifier"] as? String
                    == Self.plainMessage.uuidString.lowercased(), "\(next.body)")
            // Support sees both answers on the customer's offers.
            let overview = try await request(port, "GET", "/v1/subscribers/rita/offers", key: TestSecrets.secretKey)
            let answers = overview.json["retention_answers"] as? [[String: Any]] ?? []
            #expect(answers.count == 2 && Set(answers.compactMap { $0["rule"] as? String }) == ["stay_offer", "everyone"])
            // Outcomes: both pending until the period ends; then, not renewed, both left.
            let outcomes = try await request(port, "GET", "/v1/retention-messages/outcomes", key: TestSecrets.secretKey)
            let rows = outcomes.json["answers"] as? [[String: Any]] ?? []
            #expect(
                rows.count == 2 && rows.allSatisfy { $0["pending"] as? Int == 1 && $0["answered"] as? Int == 1 },
                "\(outcomes.body)")
            clock.advance(by: 40 * 86_400_000)
            let later = try await request(port, "GET", "/v1/retention-messages/outcomes", key: TestSecrets.secretKey)
            let after = later.json["answers"] as? [[String: Any]] ?? []
            #expect(
                after.count == 2 && after.allSatisfy { $0["left"] as? Int == 1 && $0["pending"] as? Int == 0 }, "\(later.body)")
            #expect(try await request(port, "GET", "/v1/retention-messages/outcomes", key: TestSecrets.publicKey).status == 403)
            let metrics = try await request(port, "GET", "/metrics", key: TestSecrets.secretKey).body
            #expect(
                metrics.contains(#"retention_answers_total{kind="promotional_offer",outcome="retention_rule_matched"} 1"#),
                "\(metrics)")
            #expect(metrics.contains(#"retention_answers_total{kind="any",outcome="repeated"} 1"#))
            // Erased with the person.
            #expect(try await request(port, "DELETE", "/v1/subscribers/rita", key: TestSecrets.secretKey).status < 300)
            #expect(try sql.scalarInt("SELECT count(*) FROM retention_answers") == 0)
        }
    }

    @Test func forgedOrForeignRequestsAreRefusedAndUnknownPurchasesGetTheDefault() async throws {
        try await Self.withRetention { _, port, db, clock in
            let unknown = try await Self.ask(port, try Self.signedRequest("999", at: clock.now))
            #expect(unknown.status == 200 && unknown.body == "{}", "\(unknown.body)")
            #expect(try TestDatabase.open(db).scalarText("SELECT decision FROM retention_answers") == "subscription_unknown")
            // Another app's request, a payload its signature does not cover, not Apple's body.
            let foreign = try await Self.ask(port, try Self.signedRequest("999", appleID: 99, at: clock.now))
            #expect(foreign.status == 422, "\(foreign.body)")
            let genuine = try Self.signedRequest("999", at: clock.now)
            let other = try Self.signedRequest("998", at: clock.now)
            let jws = { (body: String) in
                body.split(separator: "\"")[3].split(separator: ".").map(String.init)
            }
            let (a, b) = (jws(genuine), jws(other))
            let forged = try await Self.ask(port, #"{"signedPayload":"\#(a[0]).\#(b[1]).\#(a[2])"}"#)
            #expect(forged.status == 422 && forged.body.contains("invalid_signature"), "\(forged.body)")
            let bad = try await Self.ask(port, #"{"signed_payload":"x"}"#)
            #expect(bad.status == 400 && bad.body.contains("invalid_request"), "\(bad.body)")
            #expect(try TestDatabase.open(db).scalarInt("SELECT count(*) FROM retention_answers") == 1)
        }
    }
}
