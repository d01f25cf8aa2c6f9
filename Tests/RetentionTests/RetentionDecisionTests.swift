import Entitlements
import FoundationEssentials
import Testing

@testable import Retention

@Suite("Retention: which answer, and why")
struct RetentionDecisionTests {
    static let day: Int64 = 86_400_000
    static let now: Int64 = 1_795_000_000_000
    static let (m1, m2, m3, m4) = (
        UUID(uuidString: "00000000-0000-4000-8000-000000000001")!, UUID(uuidString: "00000000-0000-4000-8000-000000000002")!,
        UUID(uuidString: "00000000-0000-4000-8000-000000000003")!, UUID(uuidString: "00000000-0000-4000-8000-000000000004")!
    )
    static let rules = RetentionRules(rules: [
        RetentionRule(name: "trials", when: RetentionConditions(inTrial: true), answer: .message(m1)),
        RetentionRule(
            name: "failing", when: RetentionConditions(billingIssue: true),
            answer: .alternateProduct(message: m2, productID: "monthly_lite")),
        RetentionRule(
            name: "loyal", when: RetentionConditions(minTenureDays: 60, maxPricePaid: ["USD": 9_990], maxPriorOffers: 0),
            answer: .promotionalOffer(message: m3, offerID: "LOYAL20", productID: nil, format: .jws)),
        RetentionRule(name: "german", when: RetentionConditions(locales: ["de"]), answer: .message(m4)),
    ])

    static func period(_ id: String, from: Int64, to: Int64, trial: Bool = false, price: Int64 = 9_990) -> Purchase {
        Purchase(
            transactionID: id, originalTransactionID: "o1", productID: "monthly", purchaseDate: now + from * day,
            expiresDate: now + to * day, isTrialPeriod: trial, subscriptionGroupID: "pro",
            commerce: Commerce(price: trial ? nil : Price(milliunits: price, currency: "USD", source: .store), storefront: "USA"))
    }

    static func decide(
        _ facts: Facts, locale: String = "en-US", priorOffers: Int = 0, offer: String = "offer_eligible"
    ) -> RetentionDecision {
        RetentionChooser.decide(
            RetentionRequest(originalTransactionID: "o1", productID: "monthly", userLocale: locale), rules: rules, facts: facts,
            priorOffers: priorOffers, now: now
        ) { _, _ in Explanation(rule: offer, decision: "", facts: []) }
    }

    @Test func theFirstRuleWhoseConditionsHoldAnswers() {
        let trial = Self.decide(Facts(purchases: [Self.period("t1", from: -3, to: 4, trial: true)]))
        #expect(trial.rule == "trials" && trial.answer == .message(Self.m1) && trial.periodEnd == Self.now + 4 * Self.day)
        #expect(trial.explanation.rule == "retention_rule_matched")
        #expect(trial.explanation.facts.contains(Fact("period_type", .text("trial"))))
        // Ninety days paid at 9.99: the loyal customer is offered LOYAL20.
        let loyal = Facts(purchases: [
            Self.period("t1", from: -90, to: -60), Self.period("t2", from: -60, to: -30), Self.period("t3", from: -30, to: 1),
        ])
        let decided = Self.decide(loyal)
        #expect(decided.rule == "loyal" && decided.answer?.kind == "promotional_offer")
        #expect(decided.explanation.facts.contains(Fact("tenure_days", .number(90))))
    }

    @Test func aRulePassedOverLetsTheNextDecideAndSaysSo() {
        let loyal = Facts(purchases: [Self.period("t1", from: -90, to: 1)])
        // The offer's own rules refuse it: the German message is next, for a German customer.
        let refused = Self.decide(loyal, locale: "de-DE", offer: "offer_limit_reached")
        #expect(refused.rule == "german")
        #expect(refused.explanation.facts.contains(Fact("passed_over", .text("loyal (offer_limit_reached)"))))
        // Given an offer before, a price above the bound, another currency: the rule does not hold.
        #expect(Self.decide(loyal, priorOffers: 1).rule == nil)
        #expect(Self.decide(Facts(purchases: [Self.period("t1", from: -90, to: 1, price: 12_990)])).rule == nil)
        var euro = Self.period("t1", from: -90, to: 1)
        euro.commerce.price = Price(milliunits: 4_990, currency: "EUR", source: .store)
        #expect(Self.decide(Facts(purchases: [euro])).rule == nil)
        // `de` matches de-DE and de_AT, not dex.
        for (locale, rule) in [("de-DE", "german"), ("de_AT", "german"), ("de", "german"), ("dex", nil), ("en-DE", nil)] {
            #expect(
                Self.decide(Facts(purchases: [Self.period("t1", from: -10, to: 1)]), locale: locale).rule == rule, "\(locale)")
        }
    }

    @Test func aFailingPaymentIsOfferedTheCheaperPlan() {
        let retrying = Facts(
            purchases: [Self.period("t1", from: -40, to: -2)],
            renewals: [
                RenewalObservation(
                    observedAt: Self.now - Self.day,
                    renewal: Renewal(
                        originalTransactionID: "o1", autoRenewStatus: true, expirationIntent: 2, isInBillingRetryPeriod: true))
            ])
        let decided = Self.decide(retrying)
        #expect(decided.rule == "failing" && decided.answer == .alternateProduct(message: Self.m2, productID: "monthly_lite"))
        #expect(decided.explanation.facts.contains(Fact("billing_issue", .flag(true))))
    }

    @Test func noMatchOrAnUnknownPurchaseAnswersNothing() {
        let none = Self.decide(Facts(purchases: [Self.period("t1", from: -10, to: 1)]))
        #expect(none.rule == nil && none.answer == nil && none.explanation.rule == "no_rule_matched")
        #expect(none.periodEnd == Self.now + Self.day)
        let unknown = Self.decide(Facts(purchases: []))
        #expect(unknown.explanation.rule == "subscription_unknown" && unknown.periodEnd == nil)
    }
}
