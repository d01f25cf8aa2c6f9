import Testing

@testable import Entitlements

let now: Int64 = 1_700_000_000_000
let day: Int64 = 86_400_000

func period(
    _ id: String, original: String = "o1", product: String = "monthly", purchased: Int64, expires: Int64,
    cancelled: Int64? = nil, trial: Bool = false, intro: Bool = false, upgraded: Bool = false, family: Bool = false
) -> Purchase {
    Purchase(
        transactionID: id, originalTransactionID: original, productID: product, purchaseDate: purchased,
        originalPurchaseDate: now - 90 * day, expiresDate: expires, cancellationDate: cancelled, isTrialPeriod: trial,
        isInIntroOfferPeriod: intro, isUpgraded: upgraded, ownershipType: family ? "FAMILY_SHARED" : "PURCHASED",
        environment: "sandbox")
}

private func state(_ purchases: [Purchase], _ renewal: Renewal? = nil) -> SubscriptionStatus {
    let all = Derivation.subscriptions(purchases: purchases, renewals: renewal.map { [$0] } ?? [], now: now)
    precondition(all.count == 1)
    return all[0]
}

@Suite("Subscription state derivation")
struct DerivationTests {
    @Test func theNewestPeriodDecidesWhateverTheOrder() {
        let old = period("t1", purchased: now - 40 * day, expires: now - 10 * day)
        let current = period("t2", purchased: now - 10 * day, expires: now + 20 * day)
        for order in [[old, current], [current, old]] {
            let s = state(order, Renewal(originalTransactionID: "o1", autoRenewStatus: true))
            #expect(s.state == .active)
            #expect(s.storeTransactionID == "t2")
            #expect(s.willRenew)
            #expect(s.isEntitled)
            #expect(s.expiresAt == now + 20 * day)
            #expect(s.unsubscribeDetectedAt == nil)
        }
    }

    @Test func autoRenewOffStillEntitlesUntilExpiry() {
        let s = state(
            [period("t1", purchased: now - day, expires: now + day)], Renewal(originalTransactionID: "o1", autoRenewStatus: false)
        )
        #expect(s.state == .active && !s.willRenew)
        #expect(s.unsubscribeDetectedAt == now - day)
    }

    @Test func graceThenBillingRetryThenExpired() {
        let lapsed = [period("t1", purchased: now - 31 * day, expires: now - day)]
        let grace = state(
            lapsed,
            Renewal(
                originalTransactionID: "o1", autoRenewStatus: true, expirationIntent: 2,
                gracePeriodExpiresDate: now + 2 * day, isInBillingRetryPeriod: true))
        #expect(grace.state == .gracePeriod && grace.isEntitled)
        #expect(grace.gracePeriodExpiresAt == now + 2 * day)
        #expect(grace.billingIssueDetectedAt == now - day)

        let retry = state(
            lapsed,
            Renewal(
                originalTransactionID: "o1", autoRenewStatus: true, expirationIntent: 2,
                gracePeriodExpiresDate: now - 1, isInBillingRetryPeriod: true))
        #expect(retry.state == .billingRetry && !retry.isEntitled)
        #expect(retry.gracePeriodExpiresAt == nil)
        #expect(retry.willRenew)

        let expired = state(
            lapsed,
            Renewal(
                originalTransactionID: "o1", autoRenewStatus: false, expirationIntent: 1,
                isInBillingRetryPeriod: false))
        #expect(expired.state == .expired && !expired.isEntitled && !expired.willRenew)
        #expect(state(lapsed).state == .expired)
    }

    @Test func aRefundWinsEvenBeforeExpiry() {
        let s = state([period("t1", purchased: now - day, expires: now + 29 * day, cancelled: now - 1000)])
        #expect(s.state == .refunded && !s.isEntitled)
        #expect(s.refundedAt == now - 1000)
    }

    @Test func anUpgradedSubscriptionHandsOverToTheNewProduct() {
        let monthly = period(
            "t1", original: "o1", product: "monthly", purchased: now - 5 * day, expires: now + 25 * day,
            cancelled: now - 2 * day, upgraded: true)
        let yearly = period("t2", original: "o2", product: "yearly", purchased: now - 2 * day, expires: now + 363 * day)
        let all = Derivation.subscriptions(purchases: [monthly, yearly], renewals: [], now: now)
        #expect(all.map(\.state) == [.upgraded, .active])
        let rules = EntitlementRules(["premium": ["monthly", "yearly"]])
        let grant = rules.grants(subscriptions: all, purchases: [])["premium"]
        guard case .subscription(let s) = grant?.source else {
            Issue.record("no grant")
            return
        }
        #expect(s.productID == "yearly" && grant?.isActive == true)
    }

    @Test func periodTypeAndOwnership() {
        #expect(state([period("t1", purchased: now, expires: now + day, trial: true)]).periodType == "trial")
        #expect(state([period("t1", purchased: now, expires: now + day, intro: true)]).periodType == "intro")
        #expect(state([period("t1", purchased: now, expires: now + day)]).periodType == "normal")
        #expect(state([period("t1", purchased: now, expires: now + day, family: true)]).ownership == "family_shared")
    }
}
