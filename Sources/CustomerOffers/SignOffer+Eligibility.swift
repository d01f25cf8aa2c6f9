import Clocks
import DatabaseEngine
import Entitlements
import Offers
package import ReceiptCore

extension SignOffer {
    /// Whether each of `productIDs` would let the customer have its introductory offer now, by
    /// Apple's once per subscription group per Apple Account rule and the stored facts; nil for a
    /// product in no configured group (`offers.file`), of which receiptd cannot say. Reads only:
    /// nothing is signed or recorded (StoreKit 1 asks this before it shows a price; StoreKit 2
    /// apps are answered by ``introductory(appUserID:productID:transactionID:bundleID:requestedBy:caller:)``).
    package func introductoryEligibility(_ appUserID: String, productIDs: [String]) async throws(ReceiptError)
        -> [String: Bool?]
    {
        _ = try FieldRules.appUserID(appUserID)
        let now = clock.now()
        let rules = rules
        let (customer, account, groupIDs) = try await read { [self] db in
            let customer = try Self.customer(appUserID, in: db)
            var groupIDs: [String: Set<String>] = [:]
            for product in productIDs { groupIDs[product] = try appleGroupIDs(of: product, customer.facts, in: db) }
            return (customer, try sameAppleAccount(customer, in: db), groupIDs)
        }
        var answer: [String: Bool?] = [:]
        for product in productIDs {
            guard rules.group(of: product, facts: customer.facts) != nil else {
                answer[product] = .some(nil)
                continue
            }
            let decision = Eligibility.introductory(
                productID: product, rules: rules, facts: customer.facts, sameAppleAccount: account,
                appleGroupIDs: groupIDs[product] ?? [], now: now)
            answer[product] = decision.rule == "introductory_offer_eligible"
        }
        return answer
    }
}
