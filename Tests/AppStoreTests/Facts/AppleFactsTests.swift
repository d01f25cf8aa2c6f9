import AppStore
import Entitlements
import Foundation
import JSON
import ReceiptTesting
import Testing

/// The realistic captures (Fixtures/AppStore, see SOURCES.md there) through the same mapping and
/// derivation the service runs.
private func capture(_ name: String) throws -> JSONValue {
    try JSONValue.parse(Fixtures.bytes("AppStore/\(name)"))
}

/// The facts of a subscriber holding everything `response` says, its renewal info seen at
/// `seenAt`, dates pinned as storage's reads pin them.
private func facts(_ response: VerifyReceiptResponse, seenAt: Int64) -> Facts {
    let verified = AppleFacts.facts(of: response, environment: .sandbox)
    return Facts(
        purchases: verified.purchases.map(\.fact),
        renewals: verified.renewals.enumerated().map {
            RenewalObservation(observedAt: seenAt, sequence: Int64($0), renewal: $1.fact)
        }
    ).clamped(to: AppleDate.range)
}

private func ms(_ rfc3339: String) -> Int64 {
    Int64(ISO8601DateFormatter().date(from: rfc3339)!.timeIntervalSince1970 * 1000)
}

@Suite("Real captures through the derivation")
struct AppleFactsTests {
    @Test func theFortyTwoTransactionReceiptEndsExpiredByVoluntaryCancellation() throws {
        let json = try capture("verify-receipt-response.json")
        let response = try VerifyReceiptResponse(json: json.jsonBytes)
        let requestDate = ms("2021-08-14T15:19:43Z")
        let facts = facts(response, seenAt: requestDate)
        #expect(facts.purchases.count == 43)
        let subs = Derivation.subscriptions(facts, now: requestDate)
        let current = try #require(subs.first { $0.state != .upgraded && $0.productID == "one_month_subscription" })
        #expect(current.state == .expired)
        #expect(current.expirationReason == .customerCancelled)
        #expect(current.storeTransactionID == "1000000767477815")  // the newest by date, from latest_receipt_info
        #expect(subs.allSatisfy { !$0.isEntitled })
        // The renewal info names another product than the current one: shown as what it renews into only while running.
        #expect(current.renewsInto == nil)

        let events = History.events(facts, appUserID: "u", asOf: requestDate)
        #expect(events.first?.kind == .initialPurchase)
        #expect(events.last?.kind == .expiration)
        #expect(events.last?.at == ms("2021-01-20T13:05:00Z"))
        #expect(events.contains { $0.kind == .productChange })
        #expect(Set(events.map(\.key)).count == events.count)
        // Same facts in another order: same answer.
        var shuffled = facts
        shuffled.purchases.reverse()
        #expect(History.events(shuffled, appUserID: "u", asOf: requestDate) == events)
    }

    @Test func theV1NotificationsUpgradedPeriodsNeverGrant() throws {
        let unified = try #require(try capture("v1-server-notification.json")["unified_receipt"])
        let response = try VerifyReceiptResponse(json: unified.jsonBytes)
        let changed = ms("2020-11-25T08:30:02Z")
        let facts = facts(response, seenAt: changed)
        #expect(facts.purchases.count == 54)
        // 19:00, with what the receipt held then: the upgraded yearly period (until 19:29) is
        // superseded; the monthly one bought at 18:58 runs.
        var then = facts
        then.purchases.removeAll { $0.purchaseDate! > ms("2020-11-08T19:00:00Z") }
        let at19 = Derivation.subscriptions(then, now: ms("2020-11-08T19:00:00Z"))
        let monthly = try #require(at19.first { $0.productID == "one_month_subscription" })
        #expect(monthly.state == .active)
        #expect(monthly.storeTransactionID == "1000000739325689")
        #expect(at19.first { $0.productID == "one_year_subscription" }?.state == .upgraded)
        #expect(at19.first { $0.productID == "one_year_subscription" }?.isEntitled == false)
        // After the last period, with auto-renew off and intent 1: expired, customer cancelled.
        let after = Derivation.subscriptions(facts, now: ms("2020-11-25T08:40:00Z"))
        #expect(after.first { $0.productID == "one_month_subscription" }?.state == .expired)
        #expect(after.first { $0.productID == "one_month_subscription" }?.expirationReason == .customerCancelled)
        let events = History.events(facts, appUserID: "u", asOf: ms("2020-11-25T08:40:00Z"))
        #expect(events.filter { $0.kind == .productChange }.count >= 4)
        #expect(events.last?.kind == .expiration)
    }

    @Test func remappingAStoredRowGivesTheSameRow() throws {
        let response = try VerifyReceiptResponse(json: try capture("verify-receipt-response.json").jsonBytes)
        let verified = AppleFacts.facts(of: response, environment: .sandbox)
        for p in verified.purchases { #expect(AppleFacts.remapped(p) == p) }
        for r in verified.renewals {
            let stored = Stated(RenewalObservation(observedAt: 5, sequence: 1, renewal: r.fact), rawJSON: r.rawJSON)
            #expect(AppleFacts.remapped(stored) == stored)
        }
        // A signed transaction's appTransactionId comes back from its raw JSON; a verifyReceipt
        // row keeps the one stored (it states none).
        let signed = try #require(
            try SignedTransaction(
                .object([
                    "transactionId": .string("9"), "originalTransactionId": .string("9"), "productId": .string("lifetime"),
                    "bundleId": .string("com.x"), "appTransactionId": .string("7009"), "storefront": .string("USA"),
                ])))
        let stored = AppleFacts.purchase(signed)
        #expect(stored.fact.appTransactionID == "7009")
        var lost = stored
        lost.fact.appTransactionID = nil
        #expect(AppleFacts.remapped(lost)?.fact.appTransactionID == "7009")
        var learned = verified.purchases[0]
        learned.fact.appTransactionID = "7010"
        #expect(AppleFacts.remapped(learned)?.fact.appTransactionID == "7010")
        var broken = verified.purchases[0]
        broken.rawJSON = "[]"
        #expect(AppleFacts.remapped(broken) == nil)
    }
}
