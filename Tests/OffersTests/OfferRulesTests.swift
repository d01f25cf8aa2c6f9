import Testing

@testable import Offers

@Suite("Offers: Config/offers.json read")
struct OfferRulesTests {
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
