import Testing

@testable import Entitlements

/// Apple's 2025–26 refund fields read with the revocation date: the kind, the share, and what
/// they change (the explanation, the state's name, units refunded), never that access ends.
@Suite("Refunds")
struct RefundTests {
    func refunded(
        _ type: String?, _ percentage: Int64? = nil, family: Bool = false, quantity: Int64? = nil, product: String = "monthly",
        upgraded: Bool = false
    ) -> Purchase {
        var p = period("t1", product: product, from: 0, to: 30, cancelled: 10, upgraded: upgraded, family: family)
        p.commerce.revocationType = type
        p.commerce.revocationPercentage = percentage
        p.quantity = quantity
        return p
    }

    @Test func readsKindAndShareClampedAndLowercased() throws {
        let prorated = try #require(Refund(refunded("REFUND_PRORATED", 67_932)))
        #expect(prorated.kind == .prorated && prorated.percentage == 67_932 && prorated.at == d(10))
        #expect(prorated.facts.map(\.name) == ["revocation_type", "revocation_percentage"])
        #expect(prorated.facts.last?.value == .text("67.932"))
        #expect(prorated.refundedWords == "refunded 67.932% of")
        #expect(Refund(refunded("refund_full", 250_000))?.percentage == 100_000)
        #expect(Refund(refunded("REFUND_FULL", -5))?.percentage == 0)
        #expect(Refund(refunded("SOMETHING_NEW"))?.kind == nil)
        #expect(Refund(refunded(nil))?.facts.isEmpty == true)
        // An upgrade's cancellation is no refund; nor is a purchase never cancelled.
        #expect(Refund(refunded("REFUND_FULL", upgraded: true)) == nil)
        #expect(Refund(period("t2", from: 0, to: 30)) == nil)
    }

    @Test(arguments: [(Int64(15), "0.015"), (40_000, "40.000"), (100_000, "100.000"), (0, "0.000"), (5_500, "5.500")])
    func percentagesAreDecimalTextOfThreePlaces(milliunits: Int64, text: String) {
        #expect(Refund.percentText(milliunits) == text)
    }

    @Test func familyRevocationIsAppleKindOrElseTheOwnership() {
        #expect(Refund(refunded("FAMILY_REVOKE"))?.isFamilyRevocation == true)
        #expect(Refund(refunded(nil, family: true))?.isFamilyRevocation == true)
        // The family member's purchase refunded to the purchaser: Apple says a refund.
        #expect(Refund(refunded("REFUND_FULL", family: true))?.isFamilyRevocation == false)
    }

    /// "if 1 of 3 items was refunded, the value would be approximately 33.333" (StoreKit's
    /// `revocationPercentage`): the nearest whole number of units.
    @Test func aProratedShareOfSeveralUnitsIsTheNearestWholeNumberOfThem() {
        #expect(Refund(refunded("REFUND_PRORATED", 33_333))?.refundedUnits(of: 3) == 1)
        #expect(Refund(refunded("REFUND_PRORATED", 66_667))?.refundedUnits(of: 3) == 2)
        #expect(Refund(refunded("REFUND_PRORATED", 50_000))?.refundedUnits(of: 5) == 3)  // 2.5 rounds up
        #expect(Refund(refunded("REFUND_FULL", 100_000))?.refundedUnits(of: 4) == 4)
        #expect(Refund(refunded("REFUND_PRORATED", 50_000))?.refundedUnits(of: 1) == nil)
        #expect(Refund(refunded("REFUND_PRORATED"))?.refundedUnits(of: 3) == nil)  // no share stated
        #expect(Refund(refunded(nil))?.refundedUnits(of: 3) == nil)
    }

    @Test func aProratedRefundOfTheCurrentPeriodEndsAccessAndSaysHowMuch() throws {
        let facts = Facts(purchases: [refunded("REFUND_PRORATED", 40_000)])
        let status = try #require(Derivation.subscriptions(facts, now: d(12)).first)
        #expect(status.state == .refunded && !status.isEntitled)
        #expect(status.explanation.rule == "refunded_current_period_prorated")
        #expect(status.explanation.decision.contains("refunded 40.000% of the current period"))
        #expect(status.refund?.kind == .prorated && status.refundedAt == d(10))
        // Apple's FAMILY_REVOKE on a purchase whose ownership was not stated family-shared: revoked.
        let revoked = try #require(Derivation.subscriptions(Facts(purchases: [refunded("FAMILY_REVOKE")]), now: d(12)).first)
        #expect(revoked.state == .revoked && revoked.explanation.rule == "revoked_current_period")
        let full = try #require(Derivation.subscriptions(Facts(purchases: [refunded("REFUND_FULL", 100_000)]), now: d(12)).first)
        #expect(full.state == .refunded && full.explanation.rule == "refunded_current_period")
    }

    @Test func aConsumableRefundedInPartSaysWhichUnits() throws {
        var coins = refunded("REFUND_PRORATED", 33_333, quantity: 3, product: "coins_100")
        coins.expiresDate = nil
        let catalog = Catalog(["coins_100": .consumable])
        let purchase = try #require(Derivation.nonSubscriptions(Facts(purchases: [coins]), catalog: catalog, now: d(12)).first)
        #expect(purchase.refund?.kind == .prorated && purchase.refundedQuantity == 1)
        #expect(purchase.explanation.facts.contains(Fact("refunded_quantity", .number(1))))
        let event = try #require(
            History.events(Facts(purchases: [coins]), appUserID: "u", catalog: catalog, asOf: d(12)).first { $0.kind == .refund })
        #expect(event.facts.contains(Fact("revocation_percentage", .text("33.333"))))
        #expect(event.facts.contains(Fact("refunded_quantity", .number(1))))
        // A non-consumable refunded in part: not entitled, and said so.
        var lifetime = refunded("REFUND_PRORATED", 25_000, product: "lifetime")
        lifetime.expiresDate = nil
        let kept = try #require(Derivation.nonSubscriptions(Facts(purchases: [lifetime]), now: d(12)).first)
        #expect(!kept.isEntitled && kept.explanation.rule == "refunded_prorated")
        #expect(kept.explanation.decision.contains("refunded 25.000% of this purchase"))
    }
}

/// A reversed refund: access as if never refunded, explained; the history keeps the refund (dated
/// when it took effect) and adds its reversal.
extension RefundTests {
    @Test func aReversedRefundRestoresAccessAndStaysInTheHistory() throws {
        var p = period("t1", from: 0, to: 30)
        p.refundReversal = RefundReversal(refundedAt: d(10), reversedAt: d(12))
        let status = try #require(Derivation.subscriptions(Facts(purchases: [p]), now: d(13)).first)
        #expect(status.state == .active && status.isEntitled && status.refund == nil)
        #expect(status.explanation.facts.contains(Fact("refund_reversed_at", .time(d(12)))))
        let events = History.events(Facts(purchases: [p]), appUserID: "u", asOf: d(13))
        let refund = try #require(events.first { $0.kind == .refund })
        #expect(refund.key == "refund:t1" && refund.at == d(10))
        #expect(refund.facts.contains(Fact("reversed_at", .time(d(12)))))
        let reversal = try #require(events.first { $0.kind == .refundReversed })
        #expect(reversal.at == d(12) && reversal.key == "refund_reversed:t1:\(d(10))")
        // Refunded again later: the current refund keeps the plain key; the reversed one is keyed by its date.
        p.cancellationDate = d(20)
        let again = History.events(Facts(purchases: [p]), appUserID: "u", asOf: d(21)).filter { $0.kind == .refund }
        #expect(Set(again.map(\.key)) == ["refund:t1", "refund:t1:\(d(10))"])
        #expect(Derivation.subscriptions(Facts(purchases: [p]), now: d(21)).first?.state == .refunded)
    }
}
