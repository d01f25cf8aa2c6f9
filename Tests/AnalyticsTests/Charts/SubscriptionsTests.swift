import Entitlements
import Identifiers
import Testing

@testable import Analytics

/// New paid subscriptions, non-subscription purchases, subscription retention and status, by hand.
@Suite struct SubscriptionsTests {
    @Test func newPaidSubscriptionsByHowTheyBegan() throws {
        let ledger = [
            sale("e0", user: "erin", original: "e", from: at(2026, 1, 1), to: at(2026, 1, 8), trial: true),
            sale("e1", user: "erin", original: "e", from: at(2026, 1, 8), to: at(2026, 2, 8), price: 5000),
            sale(
                "i1", user: "iris", original: "i", from: at(2026, 1, 12), to: at(2026, 2, 12), price: 1000, offerType: 1,
                offerDiscount: "PAY_AS_YOU_GO"),
            sale("j1", user: "jon", original: "j", from: at(2026, 2, 3), to: at(2026, 3, 3), price: 5000),
            sale("j2", user: "jon", original: "j", from: at(2026, 3, 3), to: at(2026, 4, 3), price: 5000),
        ]
        let a = try MovementsTests.engine(ledger).answer(ChartEngineTests.months(.newPaidSubscriptions, now: at(2026, 4, 1)))
        #expect(a.values.map { $0["trial_conversions"] } == [.count(1), .count(0), .count(0)])
        #expect(a.values.map { $0["intro_offers"] } == [.count(1), .count(0), .count(0)])
        #expect(a.values.map { $0["direct_subscriptions"] } == [.count(0), .count(1), .count(0)])
        // Jon's renewal is not new: the same as the actives movement's new actives.
        #expect(a.values.map { $0["new_paid_subscriptions"] } == [.count(2), .count(1), .count(0)])
    }

    @Test func nonSubscriptionPurchasesAndTheirRefunds() throws {
        let ledger = [
            sale("g1", user: "gus", product: "coins", from: at(2026, 2, 20), to: nil, price: 2000),
            sale(
                "g2", user: "gus", product: "coins", from: at(2026, 2, 21), to: nil, price: 2000, refundedAt: at(2026, 3, 2),
                revocationType: "REFUND_FULL"),
            sale("g3", user: "gus", product: "coins", from: at(2026, 2, 22), to: nil, price: 2000, family: true),
            sale("m1", user: "gus", from: at(2026, 2, 1), to: at(2026, 3, 1), price: 5000),
        ]
        let before = try MovementsTests.engine(ledger).answer(
            ChartEngineTests.months(.nonSubscriptionPurchases, now: at(2026, 3, 1)))
        #expect(before.values[1]["purchases"] == .count(2) && before.values[1]["refunded_purchases"] == .count(0))
        let after = try MovementsTests.engine(ledger).answer(
            ChartEngineTests.months(.nonSubscriptionPurchases, now: at(2026, 3, 3)))
        #expect(after.values[1]["refunded_purchases"] == .count(1))
    }

    @Test func subscriptionRetentionByFirstPaidPeriod() throws {
        let a = try MovementsTests.engine().answer(ChartEngineTests.months(.subscriptionRetention, now: at(2026, 4, 1)))
        // January's cohort: Alice, Bob, Dana (Carl's began in December). End of January: all three;
        // of February: Alice (Dana lapsed); of March: Alice and Dana again.
        #expect(a.values[0]["subscriptions"] == .count(3))
        #expect(a.values[0]["paying_0"] == .count(3) && a.values[0]["paying_1"] == .count(1))
        #expect(a.values[0]["paying_2"] == .count(2) && a.values[0]["retention_2"] == .ratio(2, 3))
        #expect(a.values[1]["subscriptions"] == nil)
        #expect(throws: ChartError.derivedMeasure("retention_1", parts: ["paying_1", "subscriptions"])) {
            try MovementsTests.engine().drill(
                ChartEngineTests.months(.subscriptionRetention, now: at(2026, 4, 1)), period: "2026-01-01", measure: "retention_1"
            )
        }
    }

    @Test func subscriptionStatusAtEachPeriodsEnd() throws {
        // Alice turned renewal off; Bob's February 10th charge failed: a grace period to the 16th,
        // then the App Store retrying.
        let renewals: [Identifier: Ledger.RenewalState] = [
            "a": Ledger.RenewalState(autoRenewStatus: false),
            "b": Ledger.RenewalState(
                autoRenewStatus: true, isInBillingRetryPeriod: true, gracePeriodExpiresDate: at(2026, 2, 16)),
        ]
        let engine = ChartEngine(
            ledger: Ledger(entries: MovementsTests.ledger, renewals: renewals), rates: ChartEngineTests.rates,
            settings: ChartEngineTests.settings)
        let a = try engine.answer(ChartEngineTests.months(.subscriptionStatus, now: at(2026, 3, 15)))
        func column(_ m: String) -> [Measure?] { a.values.map { $0[m] } }
        // End of January: Carl, Alice, Bob, Dana renewing. End of February: Carl, Alice (her February
        // period renewed); Bob retrying. March 15th: Carl and Dana renewing, Alice cancelling, Bob retrying.
        #expect(column("set_to_renew") == [.count(4), .count(2), .count(2)])
        #expect(column("set_to_cancel") == [.count(0), .count(0), .count(1)])
        #expect(column("billing_retry") == [.count(0), .count(1), .count(1)])
        let grace = try engine.answer(
            ChartQuery(chart: .subscriptionStatus, from: at(2026, 2, 12), to: at(2026, 2, 13), now: at(2026, 3, 15)))
        #expect(grace.values[0]["billing_issue"] == .count(1))
        // A paused Google Play subscription, after its period.
        var paused = sale("p1", user: "pia", original: "p", from: at(2026, 1, 1), to: at(2026, 2, 1), price: 5000)
        paused.purchase.store = .playStore
        let play = try ChartEngine(
            ledger: Ledger(entries: [paused], renewals: ["p": Ledger.RenewalState(storeState: "SUBSCRIPTION_STATE_PAUSED")]),
            rates: ChartEngineTests.rates, settings: ChartEngineTests.settings
        ).answer(ChartEngineTests.months(.subscriptionStatus, now: at(2026, 3, 15)))
        #expect(play.values.map { $0["paused"] } == [.count(0), .count(1), .count(1)])
    }
}
