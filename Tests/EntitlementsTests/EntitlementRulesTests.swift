import Testing

@testable import Entitlements

@Suite("Entitlement rules")
struct EntitlementRulesTests {
    @Test func aNonConsumableEntitlesForeverUnlessRefunded() {
        let lifetime = Purchase(
            transactionID: "n1", originalTransactionID: "n1", productID: "lifetime", purchaseDate: now - 400 * day)
        let refunded = Purchase(
            transactionID: "n2", originalTransactionID: "n2", productID: "lifetime", purchaseDate: now - day,
            cancellationDate: now)
        let rules = EntitlementRules(["premium": ["lifetime"], "other": ["nothing"]])
        let kept = rules.grants(subscriptions: [], purchases: Derivation.nonSubscriptions(purchases: [lifetime]))
        #expect(kept["premium"]?.isActive == true)
        #expect(kept["other"] == nil)
        let gone = rules.grants(subscriptions: [], purchases: Derivation.nonSubscriptions(purchases: [refunded]))
        #expect(gone["premium"]?.isActive == false)
        let both = rules.grants(subscriptions: [], purchases: Derivation.nonSubscriptions(purchases: [refunded, lifetime]))
        guard case .purchase(let p) = both["premium"]?.source else {
            Issue.record("no grant")
            return
        }
        #expect(p.transactionID == "n1")
    }

    @Test func anEntitlingGrantBeatsAnExpiredOne() {
        let expired = period("t1", original: "o1", product: "yearly", purchased: now - 400 * day, expires: now - 35 * day)
        let active = period("t2", original: "o2", product: "monthly", purchased: now - day, expires: now + 29 * day)
        let subs = Derivation.subscriptions(purchases: [expired, active], renewals: [], now: now)
        let grant = EntitlementRules(["premium": ["monthly", "yearly"]]).grants(subscriptions: subs, purchases: [])["premium"]
        guard case .subscription(let s) = grant?.source else {
            Issue.record("no grant")
            return
        }
        #expect(s.productID == "monthly")
    }
}
