import Entitlements
import Foundation
import Testing

@testable import Retention

@Suite("Retention: Config/retention.json read strictly")
struct RetentionRulesTests {
    static let message = "3f2a7c1e-8b4d-4e6f-9a0b-1c2d3e4f5a6b"

    /// Issue 57: the file's days are days when the rule is matched: 180 days of paid service
    /// match `min_tenure_days: 180`, a day less does not.
    @Test func tenureDaysInTheFileAreDaysOfPaidService() throws {
        let rules = try RetentionRules(
            json: Array(
                #"{"rules": [{"name": "loyal", "when": {"min_tenure_days": 180}, "message": "\#(Self.message)"}]}"#.utf8))
        let day: Int64 = 86_400_000
        let start: Int64 = 1_780_000_000_000
        let facts = Facts(purchases: [
            Purchase(
                transactionID: "t", originalTransactionID: "o", productID: "monthly", purchaseDate: start,
                expiresDate: start + 400 * day)
        ])
        func rule(at now: Int64) -> String? {
            RetentionChooser.decide(
                RetentionRequest(originalTransactionID: "o", productID: "monthly", userLocale: "en-US"), rules: rules,
                facts: facts, priorOffers: 0, now: now
            ) { _, _ in Explanation(rule: "offer_eligible", decision: "", facts: []) }.rule
        }
        #expect(rule(at: start + 180 * day) == "loyal")
        #expect(rule(at: start + 180 * day - 1) == nil)
    }

    @Test func theShippedFileAndEveryAnswerKindRead() throws {
        let text = """
            {"rules": [
              {"name": "trials", "when": {"in_trial": true, "locales": ["en"]}, "message": "\(Self.message)"},
              {"name": "failing", "when": {"billing_issue": true}, "alternate_product": {"product_id": "monthly_lite", "message": "\(Self.message)"}},
              {"name": "loyal", "when": {"min_tenure_days": 180, "max_prior_offers": 0, "max_price_paid": {"USD": "9.99", "EUR": "10"}},
               "promotional_offer": {"offer_id": "LOYAL20", "message": "\(Self.message)", "format": "v1"}},
              {"name": "everyone", "message": "\(Self.message.uppercased())"}
            ]}
            """
        let rules = try RetentionRules(json: Array(text.utf8))
        let id = try #require(UUID(uuidString: Self.message))
        #expect(rules.rules.map(\.name) == ["trials", "failing", "loyal", "everyone"])
        #expect(rules.rules[0].when == RetentionConditions(inTrial: true, locales: ["en"]))
        #expect(rules.rules[1].answer == .alternateProduct(message: id, productID: "monthly_lite"))
        #expect(rules.rules[2].when.maxPricePaid == ["USD": 9_990, "EUR": 10_000])
        #expect(rules.rules[2].answer == .promotionalOffer(message: id, offerID: "LOYAL20", productID: nil, format: .v1))
        #expect(rules.rules[3].answer == .message(id) && rules.rules[3].when == RetentionConditions())
        // The file that ships parses.
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let shipped = try Data(contentsOf: root.appendingPathComponent("Config/retention.json"))
        #expect(try RetentionRules(json: Array(shipped)).rules.count == 3)
    }

    @Test(
        arguments: [
            ("[]", "not a JSON object"),
            (#"{"rule": []}"#, "unknown member \"rule\""),
            (#"{"rules": [{"name": "a"}]}"#, "exactly one of"),
            (#"{"rules": [{"name": "a", "message": "m1"}]}"#, "message must be the message's UUID"),
            (#"{"rules": [{"name": "a b", "message": "\#(message)"}]}"#, "name must be"),
            (#"{"rules": [{"name": "a", "message": "\#(message)"}, {"name": "a", "message": "\#(message)"}]}"#, "used twice"),
            (#"{"rules": [{"name": "a", "when": {"in_trail": true}, "message": "\#(message)"}]}"#, "unknown member \"in_trail\""),
            (
                #"{"rules": [{"name": "a", "when": {"in_trial": "yes"}, "message": "\#(message)"}]}"#,
                "in_trial must be true or false"
            ),
            (#"{"rules": [{"name": "a", "when": {"min_tenure_days": -1}, "message": "\#(message)"}]}"#, "whole number"),
            (#"{"rules": [{"name": "a", "when": {"max_price_paid": {"usd": "1"}}, "message": "\#(message)"}]}"#, "ISO 4217"),
            (
                #"{"rules": [{"name": "a", "when": {"max_price_paid": {"USD": 4.99}}, "message": "\#(message)"}]}"#,
                "decimal string"
            ),
            (
                #"{"rules": [{"name": "a", "when": {"max_price_paid": {"USD": "4.9999"}}, "message": "\#(message)"}]}"#,
                "decimal string"
            ),
            (#"{"rules": [{"name": "a", "when": {"products": []}, "message": "\#(message)"}]}"#, "non-empty array"),
            (#"{"rules": [{"name": "a", "alternate_product": {"product_id": "x"}}]}"#, "alternate_product.message"),
            (
                #"{"rules": [{"name": "a", "promotional_offer": {"offer_id": "O", "message": "\#(message)", "format": "v2"}}]}"#,
                "v1 or jws"
            ),
            (
                #"{"rules": [{"name": "a", "promotional_offer": {"offer_id": "O/1", "message": "\#(message)"}}]}"#,
                "offer_id must be"
            ),
        ])
    func aMistakeIsRefusedByName(_ text: String, _ expected: String) {
        #expect {
            try RetentionRules(json: Array(text.utf8))
        } throws: { error in
            (error as? RetentionRulesError)?.description.contains(expected) == true
        }
    }
}
