import Entitlements
import Testing

@testable import Offers

@Suite("Offers: Config/offers.json read")
struct OfferRulesTests {
    /// Issue 57: the days in the file are days when the rules decide: 7 days after the expiry
    /// is eligible, 6 days and 23 hours is not; a signature 364 days ago counts, one 366 days
    /// ago no longer does.
    @Test func daysInTheFileAreDaysInTheDecision() throws {
        let rules = try OfferRules(
            json: Array(
                #"""
                {"groups": {"pro": ["monthly"]},
                 "offers": {"BACK": {"audience": "lapsed", "min_days_since_expiry": 7, "max_per_customer": 1, "per_days": 365}}}
                """#.utf8))
        let (day, hour): (Int64, Int64) = (86_400_000, 3_600_000)
        let expired: Int64 = 1_790_000_000_000
        let facts = Facts(purchases: [
            Purchase(
                transactionID: "t", originalTransactionID: "o", productID: "monthly", purchaseDate: expired - 30 * day,
                expiresDate: expired, subscriptionGroupID: "pro")
        ])
        func decide(at now: Int64, issued: [Int64] = []) -> String {
            Eligibility.promotional(
                offerID: "BACK", productID: "monthly", rules: rules, facts: facts, storefront: nil, issued: issued, now: now
            ).rule
        }
        #expect(decide(at: expired + 7 * day - hour) == "too_soon_after_expiry")
        #expect(decide(at: expired + 7 * day) == "offer_eligible")
        let now = expired + 400 * day
        #expect(decide(at: now, issued: [now - 364 * day]) == "offer_limit_reached")
        #expect(decide(at: now, issued: [now - 366 * day]) == "offer_eligible")
    }

    @Test func everyRuleIsRead() throws {
        let rules = try OfferRules(
            json: Array(
                """
                {"groups": {"pro": ["monthly", "yearly"]},
                 "offers": {"WINBACK50": {"products": ["monthly"], "audience": "lapsed", "min_days_since_expiry": 7,
                   "max_days_since_expiry": 90, "min_tenure_days": 30, "billing_issue": false, "allow_refunded": true,
                   "storefronts": ["DEU"], "max_per_customer": 1, "per_days": 365}, "ANY": {}}}
                """.utf8))
        #expect(rules.groups == ["pro": ["monthly", "yearly"]])
        #expect(
            rules.offers["WINBACK50"]
                == OfferRule(
                    products: ["monthly"], audience: .lapsed, minDaysSinceExpiry: 7, maxDaysSinceExpiry: 90, minTenureDays: 30,
                    billingIssue: false, allowRefunded: true, storefronts: ["DEU"], maxPerCustomer: 1, perDays: 365))
        #expect(rules.offers["ANY"] == OfferRule())
    }

    @Test(arguments: [
        ("[]", "not a JSON object"), (#"{"offer": {}}"#, "unknown member"),
        (#"{"offers": {"A": {"audiense": "lapsed"}}}"#, "unknown rule \"audiense\""),
        (#"{"offers": {"A": {"audience": "vip"}}}"#, "audience"), (#"{"offers": {"A": {"min_tenure_days": -1}}}"#, "at least 0"),
        (#"{"offers": {"A": {"min_tenure_days": "30"}}}"#, "whole number"),
        (#"{"offers": {"A": {"per_days": 30}}}"#, "needs max_per_customer"),
        (#"{"groups": {"pro": "monthly"}}"#, "array of strings"), (#"{"offers": {"A": {"allow_refunded": 1}}}"#, "true or false"),
    ])
    func aMistakeIsRefusedNamingIt(json: String, words: String) {
        #expect {
            _ = try OfferRules(json: Array(json.utf8))
        } throws: { error in
            (error as? OfferRulesError)?.description.contains(words) == true
        }
    }
}
