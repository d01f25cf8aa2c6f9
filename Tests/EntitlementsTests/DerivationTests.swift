import ReceiptTesting
import Testing

@testable import Entitlements

let t0: Int64 = 1_700_000_000_000
let day: Int64 = 86_400_000

/// Day `n` after t0.
func d(_ n: Double) -> Int64 { t0 + Int64(n * Double(day)) }

func period(
    _ id: String, original: String = "o1", product: String = "monthly", from: Double, to: Double, cancelled: Double? = nil,
    trial: Bool = false, intro: Bool = false, upgraded: Bool = false, family: Bool = false, promo: String? = nil,
    offerCode: String? = nil
) -> Purchase {
    Purchase(
        transactionID: id, originalTransactionID: original, productID: product, purchaseDate: d(from),
        originalPurchaseDate: t0, expiresDate: d(to), cancellationDate: cancelled.map(d),
        cancellationReason: cancelled.map { _ in "0" },
        isTrialPeriod: trial, isInIntroOfferPeriod: intro, isUpgraded: upgraded,
        ownershipType: family ? "FAMILY_SHARED" : "PURCHASED", environment: .sandbox, subscriptionGroupID: "g1",
        promotionalOfferID: promo, offerCodeRefName: offerCode)
}

func renewal(
    _ original: String = "o1", product: String = "monthly", autoRenew: Bool? = true, into: String? = nil, intent: Int64? = nil,
    grace: Double? = nil, retry: Bool? = nil, consent: String? = nil
) -> Renewal {
    Renewal(
        originalTransactionID: original, productID: product, autoRenewProductID: into ?? product, autoRenewStatus: autoRenew,
        expirationIntent: intent, gracePeriodExpiresDate: grace.map(d), isInBillingRetryPeriod: retry,
        priceConsentStatus: consent)
}

/// What Apple says at one moment (a verification or notification), and what receiptd must then answer.
struct Step {
    var at: Double
    var transactions: [Purchase] = []
    var renewals: [Renewal] = []
    /// Expected state of each listed product.
    var states: [String: SubscriptionState] = [:]
    /// Expected `pro` entitlement: true, false, or nil for "no grant at all".
    var pro: Bool?? = .none
}

/// A table row: Apple's payloads over time → states and entitlements at each step, events at the end.
struct Timeline: CustomTestStringConvertible {
    var name: String
    var steps: [Step]
    var events: [String]
    var catalog = Catalog()
    var policy = DerivationPolicy()
    var products = ["monthly", "yearly", "premium", "lifetime", "pass", "coins"]

    var testDescription: String { name }

    /// Facts as storage keeps them after each step: transactions by id (newest copy wins), a
    /// renewal snapshot each time one changes.
    func facts(upTo index: Int) -> Facts {
        var purchases: [String: Purchase] = [:]
        var observations: [RenewalObservation] = []
        for (i, step) in steps[...index].enumerated() {
            for t in step.transactions { purchases[t.transactionID] = t }
            for r in step.renewals
            where observations.last(where: { $0.renewal.originalTransactionID == r.originalTransactionID })?.renewal != r {
                observations.append(RenewalObservation(observedAt: d(step.at), sequence: Int64(i), renewal: r))
            }
        }
        return Facts(purchases: purchases.values.sorted { $0.transactionID < $1.transactionID }, renewals: observations)
    }
}

/// A Google Play period: its order, its chain (the linked tokens), Google's `expiryTime`.
func playPeriod(_ id: String, original: String = "GPT.root", product: String = "monthly", from: Double, to: Double) -> Purchase {
    Purchase(
        transactionID: id, originalTransactionID: original, productID: product, purchaseDate: d(from), originalPurchaseDate: t0,
        expiresDate: d(to), ownershipType: "PURCHASED", environment: .production, store: .playStore)
}

/// What Google Play's subscription resource says of the chain's renewal.
func playRenewal(
    _ state: String, original: String = "GPT.root", product: String = "monthly", autoRenew: Bool = true, intent: Int64? = nil,
    grace: Double? = nil, resumes: Double? = nil
) -> Renewal {
    Renewal(
        originalTransactionID: original, productID: product, autoRenewProductID: product, autoRenewStatus: autoRenew,
        expirationIntent: intent, gracePeriodExpiresDate: grace.map(d),
        isInBillingRetryPeriod: state == "SUBSCRIPTION_STATE_ON_HOLD",
        storeState: state, autoResumeDate: resumes.map(d))
}

let timelines: [Timeline] = [
    Timeline(
        name: "renewals chain by original id and order by date, not array order",
        steps: [
            Step(
                at: 65,
                transactions: [period("t3", from: 60, to: 90), period("t1", from: 0, to: 30), period("t2", from: 30, to: 60)],
                renewals: [renewal()], states: ["monthly": .active], pro: true)
        ],
        events: ["initial_purchase", "renewal", "renewal"]),
    Timeline(
        name: "a free trial converts to a paid period",
        steps: [
            Step(
                at: 1, transactions: [period("t1", from: 0, to: 7, trial: true)], renewals: [renewal()],
                states: ["monthly": .active]),
            Step(
                at: 8, transactions: [period("t2", from: 7, to: 37)], renewals: [renewal()], states: ["monthly": .active],
                pro: true),
        ],
        events: ["trial_started", "trial_converted"]),
    Timeline(
        name: "an introductory price period",
        steps: [Step(at: 1, transactions: [period("t1", from: 0, to: 30, intro: true)], renewals: [renewal()], pro: true)],
        events: ["initial_purchase"]),
    Timeline(
        name: "voluntary cancellation: entitled until expiry, then expired",
        steps: [
            Step(at: 1, transactions: [period("t1", from: 0, to: 30)], renewals: [renewal()], states: ["monthly": .active]),
            Step(at: 10, renewals: [renewal(autoRenew: false)], states: ["monthly": .active], pro: true),
            Step(at: 31, renewals: [renewal(autoRenew: false, intent: 1)], states: ["monthly": .expired], pro: false),
        ],
        events: ["initial_purchase", "cancellation", "expiration"]),
    Timeline(
        name: "auto-renew off then on again",
        steps: [
            Step(at: 1, transactions: [period("t1", from: 0, to: 30)], renewals: [renewal()]),
            Step(at: 10, renewals: [renewal(autoRenew: false)]),
            Step(at: 12, renewals: [renewal(autoRenew: true)], states: ["monthly": .active], pro: true),
        ],
        events: ["initial_purchase", "cancellation", "uncancellation"]),
    Timeline(
        name: "billing retry: not entitled, then recovered",
        steps: [
            Step(at: 1, transactions: [period("t1", from: 0, to: 30)], renewals: [renewal()]),
            Step(at: 31, renewals: [renewal(intent: 2, retry: true)], states: ["monthly": .billingRetry], pro: false),
            Step(
                at: 36, transactions: [period("t2", from: 36, to: 66)], renewals: [renewal(retry: false)],
                states: ["monthly": .active], pro: true),
        ],
        events: ["initial_purchase", "billing_issue", "renewal"]),
    Timeline(
        name: "billing retry entitles when the policy says so",
        steps: [
            Step(at: 1, transactions: [period("t1", from: 0, to: 30)], renewals: [renewal()]),
            Step(at: 31, renewals: [renewal(intent: 2, retry: true)], states: ["monthly": .billingRetry], pro: true),
        ],
        events: ["initial_purchase", "billing_issue"], policy: DerivationPolicy(billingRetryEntitles: true)),
    Timeline(
        name: "grace period: entitled until it ends, then billing retry, then expired",
        steps: [
            Step(at: 1, transactions: [period("t1", from: 0, to: 30)], renewals: [renewal()]),
            Step(at: 30.5, renewals: [renewal(intent: 2, grace: 46, retry: true)], states: ["monthly": .gracePeriod], pro: true),
            Step(at: 47, states: ["monthly": .billingRetry], pro: false),
            Step(
                at: 50, renewals: [renewal(autoRenew: false, intent: 2, retry: false)], states: ["monthly": .expired], pro: false),
        ],
        events: ["initial_purchase", "billing_issue", "grace_period_started", "expiration"]),
    Timeline(
        name: "a billing retry first seen after the expiry is not an expiration",
        steps: [
            Step(
                at: 40, transactions: [period("t1", from: 0, to: 30)], renewals: [renewal(intent: 2, retry: true)],
                states: ["monthly": .billingRetry], pro: false)
        ],
        events: ["initial_purchase", "billing_issue"]),
    Timeline(
        name: "a refund of the current period ends access",
        steps: [
            Step(
                at: 31, transactions: [period("t1", from: 0, to: 30), period("t2", from: 30, to: 60)], renewals: [renewal()],
                states: ["monthly": .active]),
            Step(
                at: 41, transactions: [period("t2", from: 30, to: 60, cancelled: 40)], renewals: [renewal(autoRenew: false)],
                states: ["monthly": .refunded], pro: false),
        ],
        events: ["initial_purchase", "renewal", "refund"]),
    Timeline(
        name: "a refund of a past period leaves the newer periods entitled",
        steps: [
            Step(
                at: 45, transactions: [period("t1", from: 0, to: 30, cancelled: 44), period("t2", from: 30, to: 60)],
                renewals: [renewal()], states: ["monthly": .active], pro: true)
        ],
        events: ["initial_purchase", "renewal", "refund"]),
    Timeline(
        name: "an upgrade: the new product grants, the upgraded one never does",
        steps: [
            Step(at: 5, transactions: [period("t1", from: 0, to: 30)], renewals: [renewal()], states: ["monthly": .active]),
            Step(
                at: 11,
                transactions: [
                    period("t1", from: 0, to: 30, cancelled: 10, upgraded: true),
                    period("t2", product: "premium", from: 10, to: 40),
                ],
                renewals: [renewal(product: "premium")], states: ["premium": .active, "monthly": .upgraded], pro: true),
        ],
        events: ["initial_purchase", "product_change"]),
    Timeline(
        name: "an upgraded long period does not keep access after the new product lapses",
        steps: [
            Step(
                at: 101,
                transactions: [
                    period("t1", product: "yearly", from: 0, to: 365, cancelled: 100, upgraded: true),
                    period("t2", product: "premium", from: 100, to: 130),
                ],
                renewals: [renewal(product: "premium")], states: ["premium": .active, "yearly": .upgraded], pro: true),
            Step(
                at: 140, renewals: [renewal(product: "premium", autoRenew: false, intent: 1)],
                states: ["premium": .expired, "yearly": .upgraded], pro: false),
        ],
        events: ["initial_purchase", "product_change", "expiration"]),
    Timeline(
        name: "a downgrade waits for the next renewal",
        steps: [
            Step(
                at: 100, transactions: [period("t1", product: "yearly", from: 0, to: 365)],
                renewals: [renewal(product: "yearly", into: "monthly")],
                states: ["yearly": .active], pro: true),
            Step(
                at: 366, transactions: [period("t2", product: "monthly", from: 365, to: 395)],
                renewals: [renewal(product: "monthly")],
                states: ["monthly": .active, "yearly": .expired], pro: true),
        ],
        events: ["initial_purchase", "product_change"]),
    Timeline(
        name: "family sharing: entitled, then revoked",
        steps: [
            Step(
                at: 1, transactions: [period("t1", from: 0, to: 30, family: true)], renewals: [renewal()],
                states: ["monthly": .active], pro: true),
            Step(
                at: 11, transactions: [period("t1", from: 0, to: 30, cancelled: 10, family: true)], renewals: [renewal()],
                states: ["monthly": .revoked], pro: false),
        ],
        events: ["initial_purchase", "refund"]),
    Timeline(
        name: "family-shared purchases do not count when the policy says so",
        steps: [
            Step(
                at: 1, transactions: [period("t1", from: 0, to: 30, family: true)], renewals: [renewal()],
                states: ["monthly": .active], pro: false)
        ],
        events: ["initial_purchase"], policy: DerivationPolicy(familySharedCounts: false)),
    Timeline(
        name: "a declined price increase expires the subscription",
        steps: [
            Step(at: 1, transactions: [period("t1", from: 0, to: 30)], renewals: [renewal(consent: "0")], pro: true),
            Step(
                at: 31, renewals: [renewal(autoRenew: false, intent: 3, consent: "0")], states: ["monthly": .expired], pro: false),
        ],
        events: ["initial_purchase", "expiration"]),
    Timeline(
        name: "a lapse and a resubscription",
        steps: [
            Step(
                at: 40, transactions: [period("t1", from: 0, to: 30)], renewals: [renewal(autoRenew: false, intent: 1)],
                states: ["monthly": .expired]),
            Step(
                at: 51, transactions: [period("t2", from: 50, to: 80)], renewals: [renewal()], states: ["monthly": .active],
                pro: true),
        ],
        events: ["initial_purchase", "expiration", "renewal"]),
    Timeline(
        name: "non-renewing passes stack end to end",
        steps: [
            Step(
                at: 1,
                transactions: [Purchase(transactionID: "p1", originalTransactionID: "p1", productID: "pass", purchaseDate: d(0))],
                pro: true),
            Step(
                at: 20,
                transactions: [
                    Purchase(transactionID: "p2", originalTransactionID: "p2", productID: "pass", purchaseDate: d(20))
                ], pro: true),
            Step(at: 45, pro: true),
            Step(at: 61, pro: false),
        ],
        events: ["initial_purchase", "initial_purchase"], catalog: Catalog(["pass": .nonRenewing(CalendarDuration(days: 30))])),
    Timeline(
        name: "a non-consumable lasts until refunded",
        steps: [
            Step(
                at: 1,
                transactions: [
                    Purchase(transactionID: "n1", originalTransactionID: "n1", productID: "lifetime", purchaseDate: d(0))
                ], pro: true),
            Step(at: 500, pro: true),
            Step(
                at: 502,
                transactions: [
                    Purchase(
                        transactionID: "n1", originalTransactionID: "n1", productID: "lifetime", purchaseDate: d(0),
                        cancellationDate: d(501))
                ], pro: false),
        ],
        events: ["initial_purchase", "refund"]),
    Timeline(
        name: "a consumable is listed but never entitles",
        steps: [
            Step(
                at: 1,
                transactions: [
                    Purchase(
                        transactionID: "c1", originalTransactionID: "c1", productID: "coins", purchaseDate: d(0), quantity: 3)
                ], pro: .some(.none))
        ],
        events: ["initial_purchase"], catalog: Catalog(["coins": .consumable])),
    Timeline(
        name: "Google Play: canceled but not expired keeps access until the period ends",
        steps: [
            Step(
                at: 1, transactions: [playPeriod("GPA.1", from: 0, to: 30)], renewals: [playRenewal("SUBSCRIPTION_STATE_ACTIVE")],
                states: ["monthly": .active], pro: true),
            Step(
                at: 10, renewals: [playRenewal("SUBSCRIPTION_STATE_CANCELED", autoRenew: false, intent: 1)],
                states: ["monthly": .active], pro: true),
            Step(
                at: 31, renewals: [playRenewal("SUBSCRIPTION_STATE_EXPIRED", autoRenew: false, intent: 1)],
                states: ["monthly": .expired], pro: false),
        ],
        events: ["initial_purchase", "cancellation", "expiration"]),
    Timeline(
        name: "Google Play: a grace period (expiryTime moved to its end), an account hold, then recovered",
        steps: [
            Step(
                at: 1, transactions: [playPeriod("GPA.1", from: 0, to: 30)], renewals: [playRenewal("SUBSCRIPTION_STATE_ACTIVE")]),
            Step(
                at: 31, transactions: [playPeriod("GPA.1", from: 0, to: 37)],
                renewals: [playRenewal("SUBSCRIPTION_STATE_IN_GRACE_PERIOD", grace: 37)], states: ["monthly": .gracePeriod],
                pro: true),
            Step(at: 38, renewals: [playRenewal("SUBSCRIPTION_STATE_ON_HOLD")], states: ["monthly": .accountHold], pro: false),
            Step(
                at: 40, transactions: [playPeriod("GPA.1..0", from: 40, to: 70)],
                renewals: [playRenewal("SUBSCRIPTION_STATE_ACTIVE")],
                states: ["monthly": .active], pro: true),
        ],
        events: ["initial_purchase", "billing_issue", "grace_period_started", "renewal"]),
    Timeline(
        name: "Google Play: an account hold entitles nothing, whatever the billing-retry policy",
        steps: [
            Step(
                at: 35, transactions: [playPeriod("GPA.1", from: 0, to: 30)],
                renewals: [playRenewal("SUBSCRIPTION_STATE_ON_HOLD")],
                states: ["monthly": .accountHold], pro: false)
        ],
        events: ["initial_purchase", "billing_issue"], policy: DerivationPolicy(billingRetryEntitles: true)),
    Timeline(
        name: "Google Play: a pause stops access until the subscription resumes",
        steps: [
            Step(
                at: 1, transactions: [playPeriod("GPA.1", from: 0, to: 30)], renewals: [playRenewal("SUBSCRIPTION_STATE_ACTIVE")]),
            Step(
                at: 31, renewals: [playRenewal("SUBSCRIPTION_STATE_PAUSED", resumes: 61)], states: ["monthly": .paused],
                pro: false),
            Step(
                at: 62, transactions: [playPeriod("GPA.1..0", from: 61, to: 91)],
                renewals: [playRenewal("SUBSCRIPTION_STATE_ACTIVE")],
                states: ["monthly": .active], pro: true),
        ],
        events: ["initial_purchase", "subscription_paused", "renewal"]),
    Timeline(
        name: "Google Play: a pending payment grants nothing and is no purchase until paid",
        steps: [
            Step(
                at: 0, transactions: [playPeriod("GPT.token", from: 0, to: 0)],
                renewals: [playRenewal("SUBSCRIPTION_STATE_PENDING")],
                states: ["monthly": .pending], pro: false),
            Step(
                at: 1, transactions: [playPeriod("GPA.1", from: 0.5, to: 30.5)],
                renewals: [playRenewal("SUBSCRIPTION_STATE_ACTIVE")],
                states: ["monthly": .active], pro: true),
        ],
        events: ["initial_purchase"]),
    Timeline(
        name: "Google Play: a linked token's upgrade continues the subscription as the new product",
        steps: [
            Step(
                at: 5, transactions: [playPeriod("GPA.1", from: 0, to: 30)], renewals: [playRenewal("SUBSCRIPTION_STATE_ACTIVE")],
                states: ["monthly": .active]),
            Step(
                at: 11, transactions: [playPeriod("GPA.2", product: "premium", from: 10, to: 40)],
                renewals: [playRenewal("SUBSCRIPTION_STATE_ACTIVE", product: "premium")],
                states: ["premium": .active, "monthly": .upgraded], pro: true),
            Step(at: 35, states: ["premium": .active, "monthly": .expired], pro: true),
        ],
        events: ["initial_purchase", "product_change"]),
]

@Suite("Subscription state derivation")
struct DerivationTests {
    @Test(arguments: timelines)
    func timeline(_ timeline: Timeline) {
        let rules = EntitlementRules(["pro": timeline.products])
        for (i, step) in timeline.steps.enumerated() {
            let facts = timeline.facts(upTo: i)
            let subs = Derivation.subscriptions(facts, catalog: timeline.catalog, policy: timeline.policy, now: d(step.at))
            for (product, expected) in step.states {
                let s = subs.first { $0.productID == product }
                #expect(s?.state == expected, "day \(step.at): \(product)")
            }
            if case .some(let expected) = step.pro {
                let others = Derivation.nonSubscriptions(
                    facts, catalog: timeline.catalog, policy: timeline.policy, now: d(step.at))
                let grant = rules.grants(subscriptions: subs, purchases: others)["pro"]
                #expect(grant?.isActive == expected, "day \(step.at): \(grant?.explanation.decision ?? "no grant")")
            }
        }
        let last = timeline.steps.count - 1
        let events = History.events(
            timeline.facts(upTo: last), appUserID: "u", catalog: timeline.catalog, policy: timeline.policy,
            asOf: d(timeline.steps[last].at))
        #expect(events.map(\.kind.rawValue) == timeline.events)
        #expect(Set(events.map(\.key)).count == events.count)
    }

    @Test func theExplanationNamesTheTransactionTheRuleAndTheTime() {
        let facts = Facts(
            purchases: [period("t1", from: 0, to: 30)], renewals: [RenewalObservation(observedAt: d(1), renewal: renewal())])
        let s = Derivation.subscriptions(facts, now: d(2))[0]
        #expect(s.explanation.rule == "active_period")
        #expect(s.explanation.facts.contains(Fact("transaction_id", .text("t1"))))
        #expect(s.explanation.facts.contains(Fact("compared_at", .time(d(2)))))
        #expect(s.explanation.facts.contains(Fact("auto_renew_status", .flag(true))))
        #expect(s.explanation.decision.contains(CivilTime.rfc3339(d(30))))
    }

    @Test func googlePlaysDecisionsAreExplainedInItsWords() {
        func status(_ renewal: Renewal, _ period: Purchase = playPeriod("GPA.1", from: 0, to: 30), at day: Double)
            -> SubscriptionStatus
        {
            Derivation.subscriptions(
                Facts(purchases: [period], renewals: [RenewalObservation(observedAt: d(day - 0.5), renewal: renewal)]),
                now: d(day))[0]
        }
        let hold = status(playRenewal("SUBSCRIPTION_STATE_ON_HOLD", intent: nil), at: 35)
        #expect(hold.explanation.rule == "account_hold" && hold.willRenew && hold.billingIssueDetectedAt == d(34.5))
        #expect(hold.explanation.decision.contains("Google Play holds the subscription (account hold)"))
        #expect(hold.explanation.facts.contains(Fact("subscription_state", .text("SUBSCRIPTION_STATE_ON_HOLD"))))
        let paused = status(playRenewal("SUBSCRIPTION_STATE_PAUSED", resumes: 61), at: 35)
        #expect(paused.state == .paused && paused.resumesAt == d(61) && !paused.isEntitled)
        #expect(
            paused.explanation.decision == "Not entitled: the customer paused the subscription until \(CivilTime.rfc3339(d(61)))."
        )
        let grace = status(
            playRenewal("SUBSCRIPTION_STATE_IN_GRACE_PERIOD", grace: 37), playPeriod("GPA.1", from: 0, to: 37), at: 31)
        #expect(grace.state == .gracePeriod && grace.gracePeriodExpiresAt == d(37))
        #expect(grace.explanation.decision.contains("Google Play's grace period lasts until"))
        // Past the grace period's end with nothing newer heard: the times decide, as for Apple.
        let lapsed = status(
            playRenewal("SUBSCRIPTION_STATE_IN_GRACE_PERIOD", grace: 37), playPeriod("GPA.1", from: 0, to: 37), at: 38)
        #expect(lapsed.state == .expired && !lapsed.isEntitled)
        var refunded = playPeriod("GPA.1", from: 0, to: 30)
        refunded.cancellationDate = d(5)
        let voided = status(playRenewal("SUBSCRIPTION_STATE_ACTIVE"), refunded, at: 6)
        #expect(voided.state == .refunded && voided.explanation.decision.hasPrefix("Not entitled: Google Play refunded"))
        // Google's state names no Apple subscription's fate.
        var apple = period("t1", from: 0, to: 30)
        apple.store = .appStore
        #expect(status(playRenewal("SUBSCRIPTION_STATE_ON_HOLD"), apple, at: 10).state == .active)
    }

    @Test func voluntaryCancellationIsDatedAndStillEntitled() {
        let observations = [
            RenewalObservation(observedAt: d(1), renewal: renewal()),
            RenewalObservation(observedAt: d(10), renewal: renewal(autoRenew: false)),
            RenewalObservation(observedAt: d(12), sequence: 1, renewal: renewal(autoRenew: false, consent: "0")),
        ]
        let s = Derivation.subscriptions(Facts(purchases: [period("t1", from: 0, to: 30)], renewals: observations), now: d(15))[0]
        #expect(s.isEntitled)
        #expect(!s.willRenew)
        #expect(s.unsubscribeDetectedAt == d(10))
        #expect(s.priceIncrease == "pending_consent")
    }

    @Test func billingIssueIsDatedFromTheFirstSnapshotThatShowedIt() {
        let observations = [
            RenewalObservation(observedAt: d(31), renewal: renewal(intent: 2, grace: 46, retry: true)),
            RenewalObservation(
                observedAt: d(33), renewal: renewal(autoRenew: true, intent: 2, grace: 46, retry: true, consent: "1")),
        ]
        let s = Derivation.subscriptions(Facts(purchases: [period("t1", from: 0, to: 30)], renewals: observations), now: d(34))[0]
        #expect(s.state == .gracePeriod)
        #expect(s.gracePeriodExpiresAt == d(46))
        #expect(s.billingIssueDetectedAt == d(31))
        #expect(s.expirationReason == nil)
    }

    @Test(arguments: [
        (Int64(1), ExpirationReason.customerCancelled), (2, .billingError), (3, .priceIncreaseDeclined), (4, .productUnavailable),
        (5, .other), (9, .unknown),
    ])
    func expirationReasonsFollowTheIntent(_ intent: Int64, _ reason: ExpirationReason) {
        let facts = Facts(
            purchases: [period("t1", from: 0, to: 30)],
            renewals: [RenewalObservation(observedAt: d(31), renewal: renewal(autoRenew: false, intent: intent))])
        #expect(Derivation.subscriptions(facts, now: d(32))[0].expirationReason == reason)
    }

    @Test func offersAreKeptAndShown() {
        let facts = Facts(purchases: [
            period("t1", original: "o1", from: 0, to: 30, offerCode: "SPRING"),
            period("t2", original: "o2", product: "yearly", from: 0, to: 365, promo: "winback"),
            period("t3", original: "o3", product: "premium", from: 0, to: 7, trial: true),
        ])
        let offers = Dictionary(uniqueKeysWithValues: Derivation.subscriptions(facts, now: d(1)).map { ($0.productID, $0.offer) })
        #expect(offers["monthly"] == Offer(type: "offer_code", id: "SPRING"))
        #expect(offers["yearly"] == Offer(type: "promotional", id: "winback"))
        #expect(offers["premium"] == Offer(type: "free_trial", id: nil))
    }

    @Test func aPendingDowngradeIsShown() {
        let facts = Facts(
            purchases: [period("t1", product: "yearly", from: 0, to: 365)],
            renewals: [RenewalObservation(observedAt: d(1), renewal: renewal(product: "yearly", into: "monthly"))])
        let s = Derivation.subscriptions(facts, now: d(2))[0]
        #expect(s.renewsInto == "monthly")
        #expect(s.productID == "yearly")
        #expect(s.isEntitled)
    }

    @Test func aConsumableNeverEntitles() {
        let facts = Facts(purchases: [
            Purchase(transactionID: "c1", originalTransactionID: "c1", productID: "coins", purchaseDate: d(0))
        ])
        let listed = Derivation.nonSubscriptions(facts, catalog: Catalog(["coins": .consumable]), now: d(1))
        #expect(listed.count == 1)
        #expect(listed[0].isEntitled == false)
        #expect(EntitlementRules(["coins": ["coins"]]).grants(subscriptions: [], purchases: listed)["coins"] == nil)
    }

    @Test func transfersAreEventsForBothHolders() {
        let facts = Facts(
            purchases: [period("t1", from: 0, to: 30)],
            transfers: [
                Transfer(originalTransactionID: "o1", from: nil, to: "a", at: d(1)),
                Transfer(originalTransactionID: "o1", from: "a", to: "b", at: d(2)),
            ])
        let toB = History.events(facts, appUserID: "b", asOf: d(3)).filter { $0.kind == .transfer }
        #expect(toB.count == 1)
        #expect(toB.first?.facts.contains(Fact("direction", .text("in"))) == true)
        let fromA = History.events(facts, appUserID: "a", asOf: d(3)).filter { $0.kind == .transfer }
        #expect(fromA.first?.facts.contains(Fact("direction", .text("out"))) == true)
    }
}

@Suite("Derivation properties")
struct DerivationPropertyTests {
    /// Random subscribers: a few chains of periods with gaps, trials, refunds, upgrades, family
    /// sharing, renewal snapshots over time, and lasting purchases.
    static func randomFacts(_ rng: inout SeededGenerator) -> Facts {
        var purchases: [Purchase] = []
        var observations: [RenewalObservation] = []
        var sequence: Int64 = 0
        for c in 0..<Int.random(in: 1...3, using: &rng) {
            var start = Double(Int.random(in: 0...20, using: &rng))
            let family = Int.random(in: 0..<5, using: &rng) == 0
            for n in 0..<Int.random(in: 1...6, using: &rng) {
                let product = ["monthly", "yearly", "premium"][Int.random(in: 0..<3, using: &rng)]
                let length = Double(Int.random(in: 5...40, using: &rng))
                let refunded = Int.random(in: 0..<8, using: &rng) == 0
                let upgraded = Int.random(in: 0..<8, using: &rng) == 0
                purchases.append(
                    period(
                        "c\(c)t\(n)", original: "o\(c)", product: product, from: start, to: start + length,
                        cancelled: refunded || upgraded ? start + 1 : nil, trial: n == 0 && Bool.random(using: &rng),
                        upgraded: upgraded, family: family))
                start += length + (Bool.random(using: &rng) ? 0 : Double(Int.random(in: 1...20, using: &rng)))
            }
            for _ in 0..<Int.random(in: 0...4, using: &rng) {
                sequence += 1
                observations.append(
                    RenewalObservation(
                        observedAt: d(Double(Int.random(in: 0...200, using: &rng))), sequence: sequence,
                        renewal: renewal(
                            "o\(c)", autoRenew: Bool.random(using: &rng), intent: Int64.random(in: 1...5, using: &rng),
                            grace: Bool.random(using: &rng) ? Double(Int.random(in: 0...200, using: &rng)) : nil,
                            retry: Bool.random(using: &rng))))
            }
        }
        if Bool.random(using: &rng) {
            purchases.append(
                Purchase(transactionID: "n1", originalTransactionID: "n1", productID: "lifetime", purchaseDate: d(3)))
        }
        return Facts(purchases: purchases, renewals: observations)
    }

    @Test(arguments: 0..<200)
    func derivationIgnoresOrderAndIsIdempotent(_ seed: Int) {
        var rng = SeededGenerator(seed: UInt64(seed))
        let facts = Self.randomFacts(&rng)
        var shuffled = facts
        shuffled.purchases.shuffle(using: &rng)
        shuffled.renewals.shuffle(using: &rng)
        for at in [d(0), d(50), d(120), d(400)] {
            let subs = Derivation.subscriptions(facts, now: at)
            #expect(subs == Derivation.subscriptions(shuffled, now: at), "seed \(seed)")
            #expect(subs == Derivation.subscriptions(facts, now: at), "seed \(seed)")
            #expect(Derivation.nonSubscriptions(facts, now: at) == Derivation.nonSubscriptions(shuffled, now: at))
            let events = History.events(facts, appUserID: "u", asOf: at)
            #expect(events == History.events(shuffled, appUserID: "u", asOf: at), "seed \(seed)")
            #expect(Set(events.map(\.key)).count == events.count, "seed \(seed)")
            // An upgraded period never entitles.
            for s in subs where s.state == .upgraded { #expect(!s.isEntitled) }
        }
    }
}
