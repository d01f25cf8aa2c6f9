import DatabaseEngine
import GooglePlay
import GooglePlaySimulator
import JSON
import ReceiptCore
import ReceiptService
import ReceiptTesting
import Storage
import Testing

@testable import Notifications

@Suite("Google Play refunds caught up from the Voided Purchases API")
struct CatchUpVoidedPurchasesTests {
    @Test func aRefundSeenOnlyByThePollIsApplied() async throws {
        try await PlayTesting.withPlay { app, clock in
            let google = app.googlePlay!
            let token = google.purchase(.lifetime, tag: "v")
            let sub = google.purchase(.active, tag: "v")
            _ = try await PlayTesting.post(app, "u", token)
            _ = try await PlayTesting.post(app, "u", sub)
            // Google refunds both while receiptd hears nothing (no notification arrives).
            clock.advance(by: 3_600_000)
            google.void(token)
            google.void(sub)
            // A refund of a purchase receiptd never stored is listed too, and skipped.
            google.void(google.purchase(.coins, tag: "stranger"))
            let summary = await app.voidedPurchases.catchUp()
            #expect(summary == .init(listed: 3, applied: 2, unknown: 1, failed: 0))
            let read = try await app.readSubscriber.document("u")
            let document = read.document.rendered(version: read.version, now: read.now, explain: false)
            #expect(document["non_subscriptions"]?["lifetime"]?.array?.first?["refunded_at"] != .null)
            #expect(document["subscriptions"]?["monthly"]?["state"]?.string == "refunded")
            #expect(document["entitlements"]?["premium"]?["active"] == .bool(false))
            // The next read starts where this one ended (less the overlap): the same refunds again change nothing.
            clock.advance(by: 3_600_000)
            let again = await app.voidedPurchases.catchUp()
            #expect(again.listed == 3 && again.failed == 0)
            let reread = try await app.readSubscriber.document("u")
            #expect(reread.version == read.version)
        }
    }

    @Test func pagesAreFollowedAndGoogleDownIsReadAgainNextTime() async throws {
        try await PlayTesting.withPlay { app, clock in
            let google = app.googlePlay!
            google.setVoidedPageSize(2)
            var tokens: [String] = []
            for n in 0..<3 {
                let token = google.purchase(.lifetime, tag: "p\(n)")
                _ = try await PlayTesting.post(app, "u\(n)", token)
                tokens.append(token)
            }
            clock.advance(by: 60_000)
            google.setOutage(milliseconds: 60_000)
            for token in tokens { google.void(token) }
            #expect(await app.voidedPurchases.catchUp().failed == 1)
            #expect(try await app.database.read { db in try PlayStore(db).voidedUntil("com.example.app") } == nil)
            clock.advance(by: 60_000)
            let summary = await app.voidedPurchases.catchUp()
            #expect(summary.applied == 3 && summary.failed == 0)
            #expect(google.calls["voidedpurchases"] == 2)  // two pages: 2 and 1
        }
    }
}
