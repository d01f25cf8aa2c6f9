import AppStore
import Crypto
import CustomerOffers
import DatabaseEngine
import Entitlements
import Foundation
import JSON
import Offers
import ReceiptCore
import ReceiptService
import ReceiptTesting
import Storage
import Testing

/// The offers routes over HTTP: decided from the stored history, signed, audited.
@Suite("Offers API", .serialized)
struct OfferTests {
    static let rules = OfferRules(
        groups: ["premium": ["monthly", "yearly"]],
        offers: ["WINBACK50": OfferRule(audience: .lapsed, minDaysSinceExpiry: 7, maxPerCustomer: 1, perDays: 365)])
    static let credentials = TestSecrets.serverAPICredentials

    static func withOffers(key: Bool = true, _ body: (TestApp, Int, String) async throws -> Void) async throws {
        let configuration = { (path: String) -> ServiceConfiguration in
            var c = testConfiguration(path: path, signedData: .init(roots: [TestPKI.root], appAppleIDs: [1234]))
            c.offers = .init(
                rules: rules,
                key: key ? SignOffer.Key(keyID: credentials.keyID, issuerID: credentials.issuerID, key: credentials.key) : nil)
            return c
        }
        try await withClockedService(configuration: configuration) { app, port, db, _ in try await body(app, port, db) }
    }

    static func ask(_ port: Int, _ user: String, _ path: String, _ body: String) async throws -> Reply {
        try await post(port, "/v1/subscribers/\(user)/offers/\(path)", body, key: TestSecrets.publicKey)
    }

    static func code(_ r: Reply) -> String? { (r.json["error"] as? [String: Any])?["code"] as? String }

    @Test func aLapsedSubscriberGetsTheWinBackOfferOnceAndItVerifies() async throws {
        try await Self.withOffers { _, port, db in
            #expect(try await postReceipt(port, user: "lena", "expired_voluntary:lena").status == 200)
            let r = try await Self.ask(
                port, "lena", "signatures", #"{"product_id":"monthly","offer_id":"WINBACK50","application_username":"ABC-def"}"#)
            #expect(r.status == 200, "\(r.body)")
            let nonce = try #require(r.json["nonce"] as? String)
            let timestamp = try #require(r.json["timestamp"] as? Int)
            #expect(r.json["key_id"] as? String == Self.credentials.keyID && r.json["format"] as? String == "v1")
            let text64 = try #require(r.json["signature"] as? String)
            let der = try #require(Data(base64Encoded: text64))
            let signed = PromotionalOfferSignature.payload(
                bundleID: "com.example.app", keyID: Self.credentials.keyID, productID: "monthly", offerID: "WINBACK50",
                applicationUsername: "abc-def", nonce: nonce, timestamp: Int64(timestamp))
            #expect(
                Self.credentials.key.publicKey.isValidSignature(
                    try P256.Signing.ECDSASignature(derRepresentation: der), for: Array(signed.utf8)))
            #expect((r.json["explanation"] as? [String: Any])?["rule"] as? String == "offer_eligible")
            // Once a year: the second ask is refused with the rule that said no.
            let again = try await Self.ask(port, "lena", "signatures", #"{"product_id":"monthly","offer_id":"WINBACK50"}"#)
            #expect(again.status == 403 && Self.code(again) == "offer_not_eligible", "\(again.body)")
            #expect(again.json["rule"] as? String == "offer_limit_reached")
            // Support sees it: what lena may have now, and what she was given.
            let overview = try await request(port, "GET", "/v1/subscribers/lena/offers", key: TestSecrets.secretKey)
            #expect(overview.status == 200, "\(overview.body)")
            let promotional = overview.json["promotional"] as? [[String: Any]] ?? []
            #expect(promotional.first?["offer_id"] as? String == "WINBACK50" && promotional.first?["eligible"] as? Bool == false)
            #expect(((promotional.first?["explanation"]) as? [String: Any])?["rule"] as? String == "offer_limit_reached")
            let given = overview.json["given"] as? [[String: Any]] ?? []
            #expect(
                given.count == 1 && given.first?["offer_id"] as? String == "WINBACK50"
                    && given.first?["format"] as? String == "v1")
            let introductory = overview.json["introductory"] as? [[String: Any]] ?? []
            #expect(introductory.first?["subscription_group"] as? String == "premium")
            #expect(try await request(port, "GET", "/v1/subscribers/lena/offers", key: TestSecrets.publicKey).status == 403)
            // Audited: one row, by which key, at whose request (the key's fingerprint, never the key).
            let rows = try TestDatabase.open(db).scalarInt("SELECT count(*) FROM offer_signatures WHERE app_user_id = 'lena'")
            #expect(rows == 1)
            let by = try TestDatabase.open(db).scalarText("SELECT requested_by FROM offer_signatures")
            #expect(by?.hasPrefix("key:") == true && by?.contains(TestSecrets.publicKey) == false)
        }
    }

    @Test func theJWSFormAndRefusals() async throws {
        try await Self.withOffers { _, port, _ in
            #expect(try await postReceipt(port, user: "mo", "expired_voluntary:mo").status == 200)
            let r = try await Self.ask(
                port, "mo", "signatures", #"{"product_id":"monthly","offer_id":"WINBACK50","format":"jws"}"#)
            #expect(r.status == 200, "\(r.body)")
            let jws = try #require(r.json["signature"] as? String)
            let parts = jws.split(separator: ".")
            let part = try #require(Base64URL.decode(parts[1].utf8))
            let claims = try JSONValue.parse(part)
            #expect(claims["aud"]?.string == "promotional-offer" && claims["offerIdentifier"]?.string == "WINBACK50")
            // An app's key is anyone's: its JWS names no transaction it did not send (Apple's claim is optional).
            #expect(claims["transactionId"] == nil && claims["bid"]?.string == "com.example.app")
            // A subscriber now, an unknown offer, a malformed body.
            #expect(try await postReceipt(port, user: "al", "active_monthly:al").status == 200)
            let active = try await Self.ask(port, "al", "signatures", #"{"product_id":"monthly","offer_id":"WINBACK50"}"#)
            #expect(active.status == 403 && active.json["rule"] as? String == "still_subscribed")
            let unknown = try await Self.ask(port, "mo", "signatures", #"{"product_id":"monthly","offer_id":"NOPE"}"#)
            #expect(unknown.status == 403 && unknown.json["rule"] as? String == "unknown_offer")
            for body in [
                #"{"offer_id":"WINBACK50"}"#, #"{"product_id":"m o","offer_id":"X"}"#,
                #"{"product_id":"monthly","offer_id":"X","format":"v3"}"#,
            ] {
                #expect(try await Self.ask(port, "mo", "signatures", body).status == 400, "\(body)")
            }
        }
    }

    @Test func introductoryEligibilityIsSignedEitherWay() async throws {
        try await Self.withOffers { _, port, _ in
            // A new customer: eligible (with a transaction id to name them, here their appTransactionId).
            let posted = #"{"app_user_id":"nova","signed_app_transaction":"\#(try Self.appTransaction())"}"#
            #expect(try await post(port, "/v1/app-transactions", posted, key: TestSecrets.publicKey).status == 200)
            let nova = try await Self.ask(
                port, "nova", "introductory-eligibility", #"{"product_id":"yearly","transaction_id":"704289572311"}"#)
            #expect(nova.status == 200 && nova.json["allowed"] as? Bool == true, "\(nova.body)")
            let novaJWS = nova.json["signature"] as? String ?? ".."
            let payload = try #require(Base64URL.decode(novaJWS.split(separator: ".", omittingEmptySubsequences: false)[1].utf8))
            let claims = try JSONValue.parse(payload)
            #expect(claims["allowIntroductoryOffer"] == .bool(true) && claims["transactionId"]?.string == "704289572311")
            // One who had the trial: signed, saying no.
            #expect(try await postReceipt(port, user: "tia", "trial:tia").status == 200)
            let tia = try await post(
                port, "/v1/subscribers/tia/offers/introductory-eligibility", #"{"product_id":"yearly"}"#,
                key: TestSecrets.secretKey)
            #expect(tia.status == 200 && tia.json["allowed"] as? Bool == false, "\(tia.body)")
            #expect((tia.json["explanation"] as? [String: Any])?["rule"] as? String == "introductory_offer_used")
            // No purchase and no transaction id: nothing to name the customer by.
            let zed = try await post(
                port, "/v1/subscribers/zed/offers/introductory-eligibility", #"{"product_id":"yearly"}"#,
                key: TestSecrets.secretKey)
            #expect(zed.status == 400)
            // An app's key must name the transaction (it is anyone's key: receiptd names none for it).
            #expect(try await Self.ask(port, "tia", "introductory-eligibility", #"{"product_id":"yearly"}"#).status == 400)
        }
    }

    @Test func withoutAKeyOffersAreRefusedAsNotConfigured() async throws {
        try await Self.withOffers(key: false) { _, port, _ in
            let r = try await Self.ask(port, "x", "signatures", #"{"product_id":"monthly","offer_id":"WINBACK50"}"#)
            #expect(r.status == 501 && Self.code(r) == "offers_not_configured")
        }
    }

    @Test func aCustomerIsGivenAtMostTenSignaturesAMinuteAndEachIsCounted() async throws {
        try await Self.withOffers { _, port, _ in
            for (user, account) in [("rex", "9001"), ("sam", "9002")] {
                let posted = #"{"app_user_id":"\#(user)","signed_app_transaction":"\#(try Self.appTransaction(account))"}"#
                #expect(try await post(port, "/v1/app-transactions", posted, key: TestSecrets.publicKey).status == 200)
            }
            let body = #"{"product_id":"yearly","transaction_id":"9001"}"#
            for n in 0..<10 {
                #expect(try await Self.ask(port, "rex", "introductory-eligibility", body).status == 200, "ask \(n)")
            }
            let limited = try await Self.ask(port, "rex", "introductory-eligibility", body)
            #expect(limited.status == 429 && Self.code(limited) == "rate_limited", "\(limited.body)")
            #expect(limited.head.lowercased().contains("retry-after: 60"))
            // Another customer is not held back by rex.
            let sam = #"{"product_id":"yearly","transaction_id":"9002"}"#
            #expect(try await Self.ask(port, "sam", "introductory-eligibility", sam).status == 200)
            let metrics = try await request(port, "GET", "/metrics", key: TestSecrets.secretKey).body
            #expect(
                metrics.contains(#"offers_signatures_total{kind="introductory",format="jws",outcome="signed"} 11"#), "\(metrics)")
            #expect(metrics.contains(#"outcome="rate_limited""#))
        }
    }

    static func appTransaction(_ id: String = "704289572311", bundle: String = "com.example.app") throws -> String {
        try TestPKI.signer.sign(
            .object(strings: [
                "bundleId": .string(bundle), "receiptType": .string("Production"), "appAppleId": .int(1234),
                "appTransactionId": .string(id), "originalApplicationVersion": .string("2.0"),
                "originalPurchaseDate": .int(1_600_000_000_000), "originalPlatform": .string("iOS"),
                "signedDate": .int(Int64(Date().timeIntervalSince1970 * 1000)),
            ]))
    }

    @Test func anAppGotBeforeVersionThreeKeepsProForLife() async throws {
        let configuration = { (path: String) -> ServiceConfiguration in
            var c = testConfiguration(path: path, signedData: .init(roots: [TestPKI.root], appAppleIDs: [1234]))
            c.grandfathering = ["pro": Grandfathering(beforeVersion: "3.0")]
            return c
        }
        try await withClockedService(configuration: configuration) { _, port, db, _ in
            let body = #"{"app_user_id":"olga","signed_app_transaction":"\#(try Self.appTransaction("11"))"}"#
            #expect(try await post(port, "/v1/app-transactions", body, key: TestSecrets.publicKey).status == 200)
            let doc = try await request(port, "GET", "/v1/subscribers/olga?explain=true", key: TestSecrets.secretKey)
            let pro = (doc.json["entitlements"] as? [String: Any])?["pro"] as? [String: Any]
            #expect(pro?["active"] as? Bool == true && pro?["period_type"] as? String == "grandfathered", "\(doc.body)")
            #expect(pro?["expires_at"] is NSNull && pro?["app_transaction_id"] as? String == "11")
            let why = pro?["explanation"] as? [String: Any]
            #expect(why?["rule"] as? String == "grandfathered", "\(doc.body)")
            #expect((why?["decision"] as? String)?.contains("first got at version 2.0, before 3.0") == true)
            // Evented when kept, without anyone reading first.
            #expect(
                try TestDatabase.open(db).scalarText("SELECT type FROM events WHERE app_user_id = 'olga'") == "app_transaction")
            // A customer who got the app at 3.0 or later is not grandfathered.
            let version3 = try TestPKI.signer.sign(
                .object(strings: [
                    "bundleId": .string("com.example.app"), "receiptType": .string("Production"), "appAppleId": .int(1234),
                    "appTransactionId": .string("12"), "originalApplicationVersion": .string("3.0"),
                    "originalPurchaseDate": .int(1_600_000_000_000), "originalPlatform": .string("iOS"),
                    "signedDate": .int(Int64(Date().timeIntervalSince1970 * 1000)),
                ]))
            #expect(
                try await post(
                    port, "/v1/app-transactions", #"{"app_user_id":"nick","signed_app_transaction":"\#(version3)"}"#,
                    key: TestSecrets.publicKey
                ).status == 200)
            let nick = try await request(port, "GET", "/v1/subscribers/nick", key: TestSecrets.secretKey)
            #expect((nick.json["entitlements"] as? [String: Any])?["pro"] == nil, "\(nick.body)")
        }
    }

    @Test func anAppTransactionNamesACustomerWhoBoughtNothing() async throws {
        try await Self.withOffers { _, port, db in
            let body = #"{"app_user_id":"newbie","signed_app_transaction":"\#(try Self.appTransaction())"}"#
            let kept = try await post(port, "/v1/app-transactions", body, key: TestSecrets.publicKey)
            #expect(kept.status == 200 && kept.json["app_transaction_id"] as? String == "704289572311", "\(kept.body)")
            #expect(
                kept.json["original_application_version"] as? String == "2.0"
                    && kept.json["environment"] as? String == "production")
            // No transaction id sent, no purchase: the AppTransaction names them (to a backend; an app
            // sends it, as it must send any transaction it wants named).
            let intro = try await post(
                port, "/v1/subscribers/newbie/offers/introductory-eligibility", #"{"product_id":"yearly"}"#,
                key: TestSecrets.secretKey)
            #expect(intro.status == 200 && intro.json["allowed"] as? Bool == true, "\(intro.body)")
            let jws = intro.json["signature"] as? String ?? ".."
            let claims = try JSONValue.parse(
                try #require(Base64URL.decode(jws.split(separator: ".", omittingEmptySubsequences: false)[1].utf8)))
            #expect(claims["transactionId"]?.string == "704289572311")
            // The same Apple Account under another id: kept, and the answer names nobody else.
            let other = try await post(
                port, "/v1/app-transactions",
                #"{"app_user_id":"second","signed_app_transaction":"\#(try Self.appTransaction())"}"#,
                key: TestSecrets.publicKey)
            #expect(other.status == 200 && !other.body.contains("newbie"))
            #expect(
                try TestDatabase.open(db).scalarInt(
                    "SELECT count(*) FROM app_transactions WHERE app_transaction_id = '704289572311'") == 2)
            // Support lists Apple Accounts under several ids.
            let shared = try await request(port, "GET", "/v1/admin/shared-app-accounts", key: TestSecrets.secretKey)
            let accounts = shared.json["shared_app_accounts"] as? [[String: Any]] ?? []
            #expect(accounts.count == 1 && accounts.first?["users"] as? Int == 2, "\(shared.body)")
            #expect(accounts.first?["app_user_ids"] as? [String] == ["newbie", "second"])
            #expect(accounts.first?["app_transaction_id"] as? String == "704289572311")
            let none = try await request(
                port, "GET", "/v1/admin/shared-app-accounts?more_than=2", key: TestSecrets.secretKey)
            #expect((none.json["shared_app_accounts"] as? [Any])?.isEmpty == true, "\(none.body)")
            #expect(
                try await request(port, "GET", "/v1/admin/shared-app-accounts", key: TestSecrets.publicKey).status == 403)
            // Another app's, and a forged one, are refused.
            let foreign = try await post(
                port, "/v1/app-transactions",
                #"{"app_user_id":"x","signed_app_transaction":"\#(try Self.appTransaction(bundle: "com.other"))"}"#,
                key: TestSecrets.publicKey)
            #expect(foreign.status == 422 && Self.code(foreign) == "wrong_app", "\(foreign.body)")
            var parts = try Self.appTransaction().split(separator: ".").map(String.init)
            parts[1] = Base64URL.encode(Array(#"{"bundleId":"com.example.app","appTransactionId":"1"}"#.utf8))
            let forged = try await post(
                port, "/v1/app-transactions", #"{"app_user_id":"x","signed_app_transaction":"\#(parts.joined(separator: "."))"}"#,
                key: TestSecrets.publicKey)
            #expect(forged.status == 422, "\(forged.body)")
            // Erased with the person.
            #expect(try await request(port, "DELETE", "/v1/subscribers/newbie", key: TestSecrets.secretKey).status < 300)
            #expect(
                try TestDatabase.open(db).scalarInt("SELECT count(*) FROM app_transactions WHERE app_user_id = 'newbie'") == 0)
        }
    }

    /// Issue 57: an app's key (anyone's) asking about someone else's user id learns none of their
    /// purchase identifiers: not in the JWS, not in the explanation, not in a refusal.
    @Test func anAppsKeyLearnsNoIdentifierOfTheCustomer() async throws {
        try await Self.withOffers { _, port, db in
            #expect(try await postReceipt(port, user: "vic", "trial:vic").status == 200)
            #expect(try await postReceipt(port, user: "lapsed", "expired_voluntary:lapsed").status == 200)
            let stored = try TestDatabase.open(db)
            let q = try stored.prepare("SELECT transaction_id, original_transaction_id, app_transaction_id FROM transactions")
            var identifiers: [String] = []
            while try q.step() { identifiers += [q.text(0), q.text(1), q.text(2)].compactMap { $0 } }
            #expect(!identifiers.isEmpty)
            let answers = [
                try await Self.ask(port, "vic", "signatures", #"{"product_id":"monthly","offer_id":"WINBACK50","format":"jws"}"#),
                try await Self.ask(
                    port, "lapsed", "signatures", #"{"product_id":"monthly","offer_id":"WINBACK50","format":"jws"}"#),
                try await Self.ask(port, "vic", "introductory-eligibility", #"{"product_id":"yearly"}"#),
            ]
            #expect(answers.map(\.status) == [403, 200, 400], "\(answers.map(\.body))")
            for answer in answers {
                var text = answer.body
                if let jws = answer.json["signature"] as? String, jws.contains(".") {
                    text += String(decoding: Base64URL.decode(jws.split(separator: ".")[1].utf8) ?? [], as: UTF8.self)
                }
                for id in identifiers { #expect(!text.contains(id), "\(id) in \(text)") }
            }
            // The backend sees the facts, with the transaction that decided.
            let support = try await post(
                port, "/v1/subscribers/vic/offers/introductory-eligibility", #"{"product_id":"yearly"}"#,
                key: TestSecrets.secretKey)
            let facts = (support.json["explanation"] as? [String: Any])?["facts"] as? [String: Any] ?? [:]
            #expect(identifiers.contains(facts["transaction_id"] as? String ?? "-"), "\(support.body)")
        }
    }

    /// Issue 57: a transaction an ask names must be the customer's; otherwise nothing is signed.
    @Test func aTransactionOfSomeoneElseIsRefusedAndNothingIsSigned() async throws {
        try await Self.withOffers { _, port, db in
            #expect(try await postReceipt(port, user: "tia", "trial:tia").status == 200)
            #expect(try await postReceipt(port, user: "lapsed", "expired_voluntary:lapsed").status == 200)
            let tias = try #require(
                try TestDatabase.open(db).scalarText(
                    "SELECT t.transaction_id FROM transactions t JOIN ownership o USING (original_transaction_id) WHERE o.app_user_id = 'tia'"
                ))
            for (path, body) in [
                ("introductory-eligibility", #"{"product_id":"yearly","transaction_id":"\#(tias)"}"#),
                ("signatures", #"{"product_id":"monthly","offer_id":"WINBACK50","format":"jws","transaction_id":"\#(tias)"}"#),
            ] {
                for key in [TestSecrets.publicKey, TestSecrets.secretKey] {
                    let r = try await post(port, "/v1/subscribers/fresh/offers/\(path)", body, key: key)
                    #expect(r.status == 403 && Self.code(r) == "transaction_not_held", "\(r.body)")
                }
            }
            #expect(try TestDatabase.open(db).scalarInt("SELECT count(*) FROM offer_signatures") == 0)
            // Her own transaction names her: signed, saying no.
            let own = try await Self.ask(
                port, "tia", "introductory-eligibility", #"{"product_id":"yearly","transaction_id":"\#(tias)"}"#)
            #expect(own.status == 200 && own.json["allowed"] as? Bool == false, "\(own.body)")
        }
    }

    /// Issue 57: the caps are checked and recorded in one transaction per customer, so concurrent
    /// asks get what the rules allow and no more.
    @Test func concurrentAsksGetNoMoreThanTheCaps() async throws {
        try await Self.withOffers { _, port, db in
            #expect(try await postReceipt(port, user: "lena", "expired_voluntary:lena").status == 200)
            // `max_per_customer: 1`: twelve asks at once, one signature.
            let once = try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<12 {
                    group.addTask {
                        try await Self.ask(port, "lena", "signatures", #"{"product_id":"monthly","offer_id":"WINBACK50"}"#).status
                    }
                }
                return try await group.reduce(into: [Int]()) { $0.append($1) }
            }
            #expect(once.filter { $0 == 200 }.count == 1, "\(once)")
            #expect(once.allSatisfy { $0 == 200 || $0 == 403 }, "\(once)")
            // Ten a minute: thirty asks at once, ten signatures.
            let posted = #"{"app_user_id":"rex","signed_app_transaction":"\#(try Self.appTransaction("9001"))"}"#
            #expect(try await post(port, "/v1/app-transactions", posted, key: TestSecrets.publicKey).status == 200)
            let paced = try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<30 {
                    group.addTask {
                        try await Self.ask(
                            port, "rex", "introductory-eligibility", #"{"product_id":"yearly","transaction_id":"9001"}"#
                        )
                        .status
                    }
                }
                return try await group.reduce(into: [Int]()) { $0.append($1) }
            }
            #expect(paced.filter { $0 == 200 }.count == 10 && paced.filter { $0 == 429 }.count == 20, "\(paced)")
            #expect(
                try TestDatabase.open(db).scalarInt("SELECT count(*) FROM offer_signatures WHERE app_user_id = 'rex'") == 10)
        }
    }

    /// Issue 57: two instances on one database hold the same caps (on PostgreSQL through the
    /// customer's advisory lock, on SQLite through its one writer): asks spread over both get one
    /// once-per-customer signature.
    @Test func twoInstancesHoldTheSameCaps() async throws {
        try await Self.withOffers { app, port, db in
            #expect(try await postReceipt(port, user: "lena", "expired_voluntary:lena").status == 200)
            let second = try await TestApp.open(app.configuration)
            let other = try second.start()
            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                for n in 0..<12 {
                    let target = n % 2 == 0 ? port : other
                    group.addTask {
                        try await Self.ask(target, "lena", "signatures", #"{"product_id":"monthly","offer_id":"WINBACK50"}"#)
                            .status
                    }
                }
                return try await group.reduce(into: [Int]()) { $0.append($1) }
            }
            await second.stop()
            #expect(statuses.filter { $0 == 200 }.count == 1 && statuses.allSatisfy { $0 == 200 || $0 == 403 }, "\(statuses)")
            #expect(try TestDatabase.open(db).scalarInt("SELECT count(*) FROM offer_signatures WHERE app_user_id = 'lena'") == 1)
        }
    }

    /// Issue 57: a subscription group is Apple's `subscriptionGroupIdentifier` on stored
    /// transactions, and the introductory offer is once per group per Apple Account.
    @Test func aGroupIsApplesAndTheTrialIsOncePerAppleAccount() async throws {
        let configuration = { (path: String) -> ServiceConfiguration in
            var c = testConfiguration(path: path, signedData: .init(roots: [TestPKI.root], appAppleIDs: [1234]))
            // `monthly` is not listed: Apple's group id, stated on a stored `yearly`, finds it.
            c.offers = .init(
                rules: OfferRules(groups: ["premium": ["yearly"]]),
                key: SignOffer.Key(
                    keyID: Self.credentials.keyID, issuerID: Self.credentials.issuerID, key: Self.credentials.key))
            return c
        }
        try await withClockedService(configuration: configuration) { _, port, _, _ in
            func intro(_ user: String) async throws -> Reply {
                try await post(
                    port, "/v1/subscribers/\(user)/offers/introductory-eligibility", #"{"product_id":"yearly"}"#,
                    key: TestSecrets.secretKey)
            }
            #expect(try await postReceipt(port, user: "ann", "downgrade_pending:ann").status == 200)
            #expect(try await postReceipt(port, user: "tia", "trial:tia").status == 200)
            let tia = try await intro("tia")
            #expect(tia.json["allowed"] as? Bool == false, "\(tia.body)")
            #expect((tia.json["explanation"] as? [String: Any])?["rule"] as? String == "introductory_offer_used")
            // Two app users of one Apple Account: the trial under una makes ula ineligible, and says so.
            for user in ["una", "ula"] {
                let posted = #"{"app_user_id":"\#(user)","signed_app_transaction":"\#(try Self.appTransaction("555"))"}"#
                #expect(try await post(port, "/v1/app-transactions", posted, key: TestSecrets.publicKey).status == 200)
            }
            #expect(try await intro("ula").json["allowed"] as? Bool == true)
            #expect(try await postReceipt(port, user: "una", "trial:una").status == 200)
            let ula = try await intro("ula")
            #expect(ula.json["allowed"] as? Bool == false, "\(ula.body)")
            let why = ula.json["explanation"] as? [String: Any]
            #expect(why?["rule"] as? String == "introductory_offer_used_by_apple_account", "\(ula.body)")
            #expect(!ula.body.contains("una"))
        }
    }
}
