import CryptoExtras
import DatabaseEngine
import Entitlements
import Foundation
import GooglePlay
import GooglePlaySimulator
import JSON
import Operations
import ReceiptCore
import ReceiptService
import ReceiptTesting
import Storage
import Testing

@testable import Notifications

/// Real-time developer notifications pushed as Pub/Sub pushes them, signed by the simulated
/// Pub/Sub's key (whose JWKS receiptd fetches from the simulator, as it would from Google).
@Suite("Google Play notifications applied")
struct IngestPlayNotificationTests {
    static func deliver(_ app: TestApp, _ push: (authorization: String, body: [UInt8])?) async throws(ReceiptError)
        -> IngestPlayNotification.Outcome
    {
        guard let push else { throw .internalFault }
        return try await app.ingestPlayNotification(authorization: push.authorization, body: push.body)
    }

    static func monthly(_ app: TestApp, _ user: String) async throws -> JSONValue? {
        let read = try await app.readSubscriber.document(user)
        return read.document.rendered(version: read.version, now: read.now, explain: false)["subscriptions"]?["monthly"]
    }

    @Test func aRenewalPushIsAppliedOnceAndAskedOfGoogle() async throws {
        try await PlayTesting.withPlay { app, clock in
            let google = app.googlePlay!
            let token = google.purchase(.renewing, tag: "r")
            let first = try await PlayTesting.post(app, "u", token)["subscriptions"]?["monthly"]
            clock.advance(by: 26 * PlayTesting.day)
            let push = google.push(token, type: 2, messageID: "m-1")
            #expect(try await Self.deliver(app, push).outcome == .applied)
            let renewed = try await Self.monthly(app, "u")
            #expect(renewed?["store_transaction_id"]?.string == (first?["store_transaction_id"]?.string ?? "") + "..0")
            // Pub/Sub delivers at least once: the same message again changes nothing.
            #expect(try await Self.deliver(app, push).outcome == .duplicate)
            #expect(google.calls["subscriptionsv2"] == 2)
            let kinds = try await app.readSubscriber.events("u", limit: 10, before: nil).events.map(\.type)
            #expect(kinds.sorted() == ["initial_purchase", "renewal"])
        }
    }

    @Test func aPushWithoutAGoodTokenIsRefusedAndRecordsNothing() async throws {
        try await PlayTesting.withPlay { app, clock in
            let google = app.googlePlay!
            let token = google.purchase(.active, tag: "a")
            let good = try #require(google.push(token))
            let stranger = try _RSA.Signing.PrivateKey(keySize: .bits2048)
            var tampered = good.authorization.split(separator: ".").map(String.init)
            tampered[1] = Base64URL.encode(
                Array(
                    #"{"aud":"receiptd-simulator","email":"x@y","email_verified":true,"exp":9999999999,"iss":"https://accounts.google.com"}"#
                        .utf8))
            let refusals: [String?] = [
                nil, "Basic abc", "Bearer not.a.jwt", tampered.joined(separator: "."),
                google.push(token, signedBy: stranger)?.authorization,  // a key Google does not list
                google.push(token, audience: "https://other.example/push")?.authorization,
                google.push(token, issuedAt: clock.now - 7_300_000)?.authorization,  // expired an hour ago
            ]
            for authorization in refusals {
                do {
                    _ = try await app.ingestPlayNotification(authorization: authorization, body: good.body)
                    Issue.record("accepted: \(authorization ?? "none")")
                } catch {
                    #expect((error as? ReceiptError)?.code == "unauthenticated_push")
                }
            }
            #expect(try await app.database.read { db in try PlayStore(db).notificationSeen("m-1") } == false)
            #expect(google.calls["subscriptionsv2"] == nil)
            #expect(try await Self.deliver(app, good).outcome == .pendingOwner)
        }
    }

    @Test func aPurchaseNoOnePostedFindsItsUserByTheAccountIdOrWaits() async throws {
        try await PlayTesting.withPlay { app, _ in
            let google = app.googlePlay!
            // The app set obfuscatedAccountId to its user id, `acct-x`, who exists already.
            _ = try await PlayTesting.post(app, "acct-x", google.purchase(.lifetime, tag: "other"))
            let outcome = try await Self.deliver(app, google.push(google.purchase(.active, tag: "x")))
            #expect(outcome == .init(outcome: .applied, appUserID: "acct-x"))
            #expect(try await Self.monthly(app, "acct-x")?["active"] == .bool(true))
            // Nobody known: kept, and the user who posts the token gets it.
            let orphan = google.purchase(.active, tag: "nobody")
            #expect(try await Self.deliver(app, google.push(orphan)).outcome == .pendingOwner)
            let posted = try await PlayTesting.post(app, "zoe", orphan)
            #expect(posted["subscriptions"]?["monthly"]?["active"] == .bool(true))
        }
    }

    @Test func aVoidedPurchaseIsRefundedAndStaysSo() async throws {
        try await PlayTesting.withPlay { app, clock in
            let google = app.googlePlay!
            let token = google.purchase(.active, tag: "v")
            _ = try await PlayTesting.post(app, "u", token)
            clock.advance(by: 60_000)
            google.void(token)
            #expect(try await Self.deliver(app, google.push(token, voided: true)).outcome == .applied)
            let monthly = try await Self.monthly(app, "u")
            #expect(monthly?["state"]?.string == "refunded" && monthly?["active"] == .bool(false))
            // Read again, and rederived: still refunded.
            _ = try await PlayTesting.post(app, "u", token)
            let report = try await app.database.write { db in
                try Rederivation(settings: app.configuration.entitlementSettings).run(db, now: clock.now, dryRun: true)
            }
            #expect(report.changed == 0 && report.unreadable == 0)
            #expect(try await Self.monthly(app, "u")?["state"]?.string == "refunded")
            let kinds = try await app.readSubscriber.events("u", limit: 10, before: nil).events.map(\.type)
            #expect(kinds.contains("refund"))
        }
    }

    /// `push` with its notification's `orderId` replaced by `order`: still authenticated (the
    /// OIDC token is Pub/Sub's, not the body's), but a claim about someone else's purchase.
    static func naming(_ push: (authorization: String, body: [UInt8])?, order: String) throws -> (String, [UInt8]) {
        let push = try #require(push)
        let body = try JSONValue.parse(push.body)
        let data = try #require(Data(base64Encoded: body["message"]?["data"]?.string ?? ""))
        let notification = try JSONValue.parse(Array(data))
        let claimed = try #require(notification["voidedPurchaseNotification"]?["orderId"]?.string)
        let forged = String(decoding: Array(data), as: UTF8.self).replacingOccurrences(of: claimed, with: order)
        let text = String(decoding: push.body, as: UTF8.self).replacingOccurrences(
            of: data.base64EncodedString(), with: Data(forged.utf8).base64EncodedString())
        return (push.authorization, Array(text.utf8))
    }

    /// Issue 57: nothing in a push's body is a fact. An authenticated void naming one token and
    /// another purchase's `orderId` voids nothing of the other's: Google's Voided Purchases API
    /// says what it voided for the token the message names.
    @Test func aVoidIsAppliedOnlyAsGoogleConfirmsIt() async throws {
        try await PlayTesting.withPlay { app, clock in
            let google = app.googlePlay!
            let victim = google.purchase(.active, tag: "victim")
            let mine = google.purchase(.active, tag: "mine")
            _ = try await PlayTesting.post(app, "vic", victim)
            _ = try await PlayTesting.post(app, "mal", mine)
            let order = try #require(try await Self.monthly(app, "vic")?["store_transaction_id"]?.string)
            clock.advance(by: 60_000)
            let forged = try Self.naming(google.push(mine, voided: true), order: order)
            _ = try await app.ingestPlayNotification(authorization: forged.0, body: forged.1)
            #expect(try await Self.monthly(app, "vic")?["active"] == .bool(true))
            #expect(try await Self.monthly(app, "mal")?["active"] == .bool(true))
            // Google's own void, named as it is, applies.
            google.void(victim)
            #expect(try await Self.deliver(app, google.push(victim, voided: true)).outcome == .applied)
            #expect(try await Self.monthly(app, "vic")?["state"]?.string == "refunded")
        }
    }

    /// Issue 57: a pending one-time purchase paid later is its poster's. Google says PURCHASED in
    /// a notification; the user who posted the pending token holds it (and receiptd, which
    /// acknowledges it so Google keeps the money, gives them what they paid for).
    @Test func aPendingPurchasePaidLaterIsItsPostersOwn() async throws {
        try await PlayTesting.withPlay { app, clock in
            let google = app.googlePlay!
            let token = google.purchase(.productPending, tag: "p")
            let pending = try await PlayTesting.post(app, "pia", token)
            #expect(pending["entitlements"] == .object([:]))
            clock.advance(by: 3_600_000)
            google.completePayment(token)
            let outcome = try await Self.deliver(app, google.push(token, type: 1))
            #expect(outcome.outcome == .applied && outcome.appUserID == "pia", "\(outcome)")
            let read = try await app.readSubscriber.document("pia")
            let document = read.document.rendered(version: read.version, now: read.now, explain: false)
            #expect(document["entitlements"]?["premium"]?["active"] == .bool(true), "\(document)")
            #expect(document["non_subscriptions"]?["lifetime"]?.array?.first?["active"] == .bool(true))
            // Erased with her: the token she posted goes too.
            _ = try await app.eraseSubscriber("pia", by: "test")
            #expect(try await app.database.read { db in try PlayStore(db).holder(of: PurchaseTokenReference.of(token)) } == nil)
        }
    }

    @Test func googleDownIsRetriedByPubSubAndATestIsRecorded() async throws {
        try await PlayTesting.withPlay { app, _ in
            let google = app.googlePlay!
            let token = google.purchase(.canceled, tag: "d")
            _ = try await PlayTesting.post(app, "u", token)
            let push = google.push(token, type: 3, messageID: "m-down")
            google.setOutage(milliseconds: 60_000)
            do {
                _ = try await Self.deliver(app, push)
                Issue.record("Google was down")
            } catch {
                #expect((error as? ReceiptError)?.code == "google_play_unavailable")
            }
            #expect(try await app.database.read { db in try PlayStore(db).notificationSeen("m-down") } == false)
            google.setOutage(milliseconds: 0)
            let again = try await Self.deliver(app, push)
            #expect(again.outcome == .unchanged, "\(again)")
            // A purchase nobody posted yet, and Play Console's test notification: recorded and acknowledged.
            #expect(try await Self.deliver(app, google.push("gp1.active.never-bought")).outcome == .pendingOwner)
            #expect(try await Self.deliver(app, google.push(token, test: true, messageID: "m-test")).outcome == .test)
            #expect(try await app.database.read { db in try PlayStore(db).notificationSeen("m-test") })
        }
    }
}
