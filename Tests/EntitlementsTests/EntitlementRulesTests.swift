import Testing

@testable import Entitlements

@Suite("Entitlement rules")
struct EntitlementRulesTests {
    @Test func aNonConsumableEntitlesForeverUnlessRefunded() {
        let lifetime = Purchase(transactionID: "n1", originalTransactionID: "n1", productID: "lifetime", purchaseDate: d(0))
        let refunded = Purchase(
            transactionID: "n2", originalTransactionID: "n2", productID: "lifetime", purchaseDate: d(399),
            cancellationDate: d(400))
        let rules = EntitlementRules(["premium": ["lifetime"], "other": ["nothing"]])
        func grants(_ p: [Purchase]) -> [String: EntitlementRules.Grant] {
            rules.grants(subscriptions: [], purchases: Derivation.nonSubscriptions(Facts(purchases: p), now: d(401)))
        }
        #expect(grants([lifetime])["premium"]?.isActive == true)
        #expect(grants([lifetime])["other"] == nil)
        #expect(grants([refunded])["premium"]?.isActive == false)
        #expect(grants([refunded])["premium"]?.explanation.rule == "no_entitling_purchase")
        guard case .purchase(let p) = grants([refunded, lifetime])["premium"]?.source else {
            Issue.record("no grant")
            return
        }
        #expect(p.transactionID == "n1")
    }

    @Test func anEntitlingGrantBeatsAnExpiredOne() {
        let expired = period("t1", original: "o1", product: "yearly", from: 0, to: 365)
        let active = period("t2", original: "o2", product: "monthly", from: 399, to: 429)
        let subs = Derivation.subscriptions(Facts(purchases: [expired, active]), now: d(400))
        let grant = EntitlementRules(["premium": ["monthly", "yearly"]]).grants(subscriptions: subs, purchases: [])["premium"]
        guard case .subscription(let s) = grant?.source else {
            Issue.record("no grant")
            return
        }
        #expect(s.productID == "monthly")
        #expect(grant?.explanation.rule == "granted_by_subscription")
        #expect(grant?.explanation.facts.contains(Fact("source_rule", .text("active_period"))) == true)
    }
}
