import Entitlements
import Testing

@testable import Offers

@Suite("Offers: who may have which offer")
struct EligibilityTests {
    static let day: Int64 = 86_400_000
    static let now: Int64 = 1_795_000_000_000
    static let rules = OfferRules(
        groups: ["pro": ["monthly", "yearly"]],
        offers: [
            "WINBACK50": OfferRule(
                audience: .lapsed, minDaysSinceExpiry: 7, maxDaysSinceExpiry: 90, maxPerCustomer: 1, perDays: 365),
            "LOYAL": OfferRule(products: ["yearly"], audience: .current, minTenureDays: 60),
            "SAVE": OfferRule(audience: .current, billingIssue: true),
            "EU": OfferRule(storefronts: ["DEU", "FRA"]),
        ])

    static func period(
        _ id: String, product: String = "monthly", from: Int64, to: Int64, trial: Bool = false, intro: Bool = false,
        refunded: Int64? = nil, original: String = "o1"
    ) -> Purchase {
        Purchase(
            transactionID: id, originalTransactionID: original, productID: product, purchaseDate: now + from * day,
            expiresDate: now + to * day, cancellationDate: refunded.map { now + $0 * day }, isTrialPeriod: trial,
            isInIntroOfferPeriod: intro, subscriptionGroupID: "pro")
    }

    @Test func anIntroductoryOfferIsOncePerGroupAcrossEveryPurchase() {
        let none = Eligibility.introductory(productID: "yearly", rules: Self.rules, facts: Facts(purchases: []), now: Self.now)
        #expect(none.rule == "introductory_offer_eligible")
        let paid = Facts(purchases: [Self.period("t1", from: -40, to: -10)])
        #expect(
            Eligibility.introductory(productID: "yearly", rules: Self.rules, facts: paid, now: Self.now).rule
                == "introductory_offer_eligible")
        for used in [Self.period("t0", from: -50, to: -43, trial: true), Self.period("t0", from: -50, to: -43, intro: true)] {
            let had = Eligibility.introductory(
                productID: "yearly", rules: Self.rules, facts: Facts(purchases: [used, Self.period("t1", from: -40, to: -10)]),
                now: Self.now)
            // The decision names no transaction (it may go to an app's public key); the facts do.
            #expect(had.rule == "introductory_offer_used" && !had.decision.contains("t0"), "\(had.decision)")
            #expect(had.facts.contains(Fact("transaction_id", .text("t0"))))
        }
        // Another group's trial does not count; a product of no known group cannot be decided.
        var other = Self.period("x", product: "tips", from: -5, to: 2, trial: true, original: "o9")
        other.subscriptionGroupID = "tips"
        #expect(
            Eligibility.introductory(productID: "monthly", rules: Self.rules, facts: Facts(purchases: [other]), now: Self.now)
                .rule
                == "introductory_offer_eligible")
        #expect(
            Eligibility.introductory(productID: "lifetime", rules: Self.rules, facts: Facts(purchases: []), now: Self.now).rule
                == "unknown_group")
    }

    /// A group is Apple's `subscriptionGroupIdentifier`: a product the file does not list is in
    /// the group Apple states, whether the customer's own listed purchase or the store's
    /// transactions (`appleGroupIDs`) say which that is.
    @Test func aGroupIsApplesIdentifierNotOnlyTheListedProducts() {
        let rules = OfferRules(groups: ["premium": ["yearly"]])
        var trial = Self.period("t0", product: "weekly", from: -50, to: -43, trial: true, original: "w0")
        trial.subscriptionGroupID = "20667927"
        let facts = Facts(purchases: [trial])
        #expect(
            Eligibility.introductory(productID: "yearly", rules: rules, facts: facts, now: Self.now).rule
                == "introductory_offer_eligible")
        #expect(
            Eligibility.introductory(productID: "yearly", rules: rules, facts: facts, appleGroupIDs: ["20667927"], now: Self.now)
                .rule == "introductory_offer_used")
        // The customer's own purchase of a listed product tells the group's identifier too.
        var yearly = Self.period("y1", product: "yearly", from: -10, to: 300, original: "y0")
        yearly.subscriptionGroupID = "20667927"
        #expect(
            Eligibility.introductory(productID: "yearly", rules: rules, facts: Facts(purchases: [trial, yearly]), now: Self.now)
                .rule == "introductory_offer_used")
    }

    /// Once per group per Apple Account: another app user's trial on the same account counts, and
    /// the decision says so without naming them.
    @Test func theTrialIsOncePerAppleAccount() {
        var theirs = Self.period("u0", from: -50, to: -43, trial: true, original: "u0")
        theirs.appTransactionID = "555"
        let decision = Eligibility.introductory(
            productID: "yearly", rules: Self.rules, facts: Facts(purchases: []), sameAppleAccount: [theirs], now: Self.now)
        #expect(decision.rule == "introductory_offer_used_by_apple_account")
        #expect(decision.decision.contains("same Apple Account") && !decision.decision.contains("u0"))
        #expect(decision.facts.contains(Fact("app_transaction_id", .text("555"))))
        #expect(
            Eligibility.introductory(
                productID: "yearly", rules: Self.rules, facts: Facts(purchases: []),
                sameAppleAccount: [Self.period("p", from: -40, to: -10)], now: Self.now
            ).rule == "introductory_offer_eligible")
    }

    @Test(
        arguments: [
            // (offer, product, purchases' (from, to), storefront, issued before (days ago), expected rule)
            ("WINBACK50", "monthly", [(-60, -30)], nil, [], "offer_eligible"),
            ("WINBACK50", "monthly", [(-60, -3)], nil, [], "too_soon_after_expiry"),
            ("WINBACK50", "monthly", [(-200, -120)], nil, [], "too_long_after_expiry"),
            ("WINBACK50", "monthly", [(-10, 20)], nil, [], "still_subscribed"),
            ("WINBACK50", "monthly", [], nil, [], "never_subscribed"),
            ("WINBACK50", "monthly", [(-60, -30)], nil, [100], "offer_limit_reached"),
            ("WINBACK50", "monthly", [(-60, -30)], nil, [400], "offer_eligible"),
            ("LOYAL", "yearly", [(-90, -60), (-60, -30), (-30, 1)], nil, [], "offer_eligible"),
            ("LOYAL", "yearly", [(-30, 1)], nil, [], "tenure_too_short"),
            ("LOYAL", "monthly", [(-90, 1)], nil, [], "product_not_offered"),
            ("LOYAL", "yearly", [(-90, -60)], nil, [], "not_subscribed"),
            ("EU", "monthly", [], "DEU", [], "offer_eligible"),
            ("EU", "monthly", [], "USA", [], "storefront_not_offered"),
            ("EU", "monthly", [], nil, [], "storefront_not_offered"),
            ("NOPE", "monthly", [], nil, [], "unknown_offer"),
        ] as [(String, String, [(Int64, Int64)], String?, [Int64], String)])
    func promotionalOffersFollowTheirRules(
        offer: String, product: String, periods: [(Int64, Int64)], storefront: String?, issuedDaysAgo: [Int64], expected: String
    ) {
        let facts = Facts(
            purchases: periods.enumerated().map { Self.period("t\($0.offset)", from: $0.element.0, to: $0.element.1) })
        let decision = Eligibility.promotional(
            offerID: offer, productID: product, rules: Self.rules, facts: facts, storefront: storefront,
            issued: issuedDaysAgo.map { Self.now - $0 * Self.day }, now: Self.now)
        #expect(decision.rule == expected, "\(decision.decision)")
        #expect(decision.decision.hasPrefix(expected == "offer_eligible" ? "Eligible" : "Not eligible"))
    }

    @Test func aRefundInThePastAndTheBillingStateAreRulesToo() {
        let refunded = Facts(purchases: [
            Self.period("t0", from: -90, to: -60, refunded: -70), Self.period("t1", from: -60, to: -30),
        ])
        let decision = Eligibility.promotional(
            offerID: "WINBACK50", productID: "monthly", rules: Self.rules, facts: refunded, storefront: nil, issued: [],
            now: Self.now)
        #expect(decision.rule == "refunded_before")
        // SAVE is for current subscribers whose payment is failing: billing retry entitles only by policy.
        let retrying = Facts(
            purchases: [Self.period("t1", from: -35, to: -5)],
            renewals: [
                RenewalObservation(
                    observedAt: Self.now - Self.day,
                    renewal: Renewal(originalTransactionID: "o1", autoRenewStatus: true, isInBillingRetryPeriod: true))
            ])
        let saved = Eligibility.promotional(
            offerID: "SAVE", productID: "monthly", rules: Self.rules, facts: retrying, storefront: nil, issued: [],
            policy: DerivationPolicy(billingRetryEntitles: true), now: Self.now)
        #expect(saved.rule == "offer_eligible", "\(saved.decision)")
        let healthy = Facts(purchases: [Self.period("t1", from: -5, to: 25)])
        #expect(
            Eligibility.promotional(
                offerID: "SAVE", productID: "monthly", rules: Self.rules, facts: healthy, storefront: nil, issued: [],
                now: Self.now
            ).rule == "no_billing_issue")
    }
}
