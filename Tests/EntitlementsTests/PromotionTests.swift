import Testing

@testable import Entitlements

/// Promotional entitlements as facts: state at any instant, the grant they make among purchases,
/// and their events.
@Suite("Promotions")
struct PromotionTests {
    let promotion = Promotion(
        id: 7, entitlement: "premium", startsAt: d(10), expiresAt: d(17), grantedBy: "key:abc", reason: "outage")

    @Test func itsStateFollowsTimeAndRevocation() {
        #expect(promotion.state(at: d(9)) == "scheduled" && !promotion.isActive(at: d(9)))
        #expect(promotion.state(at: d(10)) == "active" && promotion.isActive(at: d(10)))
        #expect(promotion.state(at: d(17)) == "expired" && !promotion.isActive(at: d(17)), "the end is exclusive")
        var revoked = promotion
        (revoked.revokedAt, revoked.revokedBy, revoked.revokeReason) = (d(12), "key:def", "mistake")
        #expect(revoked.state(at: d(11)) == "active")
        #expect(revoked.state(at: d(12)) == "revoked" && revoked.endsAt == d(12))
        #expect(
            revoked.explanation(at: d(13)).decision.contains("revoked at")
                && revoked.explanation(at: d(13)).decision.contains("mistake"))
        // Revoked after its end: it simply expired.
        var late = promotion
        late.revokedAt = d(20)
        #expect(late.state(at: d(21)) == "expired" && late.endsAt == d(17))
    }

    @Test func itGrantsItsEntitlementUnlessAPurchaseLastsLonger() {
        let rules = EntitlementRules(["premium": ["monthly"]])
        let short = period("t1", original: "o1", product: "monthly", from: 0, to: 12)
        let long = period("t2", original: "o2", product: "monthly", from: 0, to: 40)
        func grant(_ purchases: [Purchase], at day: Double, _ promotions: [Promotion]) -> EntitlementRules.Grant? {
            let facts = Facts(purchases: purchases, promotions: promotions)
            return rules.grants(
                subscriptions: Derivation.subscriptions(facts, now: d(day)), purchases: [], promotions: promotions, now: d(day)
            )["premium"]
        }
        // The promotion's end (day 17) is after the subscription's (12): it grants.
        let byPromotion = grant([short], at: 11, [promotion])
        #expect(byPromotion?.isActive == true && byPromotion?.explanation.rule == "granted_by_promotion")
        // A subscription to day 40 is the better grant.
        guard case .subscription? = grant([long], at: 11, [promotion])?.source else {
            Issue.record("the subscription should grant")
            return
        }
        // Before it starts, a promotion is no candidate at all; after its end it is an inactive one.
        #expect(grant([], at: 9, [promotion]) == nil)
        #expect(grant([], at: 18, [promotion])?.isActive == false)
        // Any entitlement name, configured or not.
        var beta = promotion
        beta.entitlement = "beta"
        #expect(rules.grants(subscriptions: [], purchases: [], promotions: [beta], now: d(11))["beta"]?.isActive == true)
    }

    @Test func itsGrantRevocationAndEndAreEvents() {
        func kinds(_ p: Promotion, asOf day: Double) -> [String] {
            History.events(Facts(purchases: [], promotions: [p]), appUserID: "u", asOf: d(day)).map(\.kind.rawValue)
        }
        #expect(kinds(promotion, asOf: 9).isEmpty)
        #expect(kinds(promotion, asOf: 11) == ["promotional_grant"])
        #expect(kinds(promotion, asOf: 17) == ["promotional_grant", "promotional_expiration"])
        var revoked = promotion
        (revoked.revokedAt, revoked.revokedBy) = (d(12), "key:def")
        #expect(kinds(revoked, asOf: 30) == ["promotional_grant", "promotional_revocation"])
        let events = History.events(Facts(purchases: [], promotions: [revoked]), appUserID: "u", asOf: d(30))
        #expect(events.map(\.key) == ["promotional_grant:7", "promotional_revocation:7"])
        #expect(events.allSatisfy { $0.productID.isEmpty && $0.originalTransactionID.isEmpty })
        #expect(events[1].facts.contains(Fact("revoked_by", .text("key:def"))))
    }

    @Test func itsInstantsAreTheFactsOwnAndAreClamped() {
        let facts = Facts(purchases: [], promotions: [promotion])
        #expect(Set(facts.instants) == [d(10), d(17)])
        var far = promotion
        far.expiresAt = .max
        #expect(Facts(purchases: [], promotions: [far]).clamped(to: 0...d(100)).promotions[0].expiresAt == d(100))
    }
}
