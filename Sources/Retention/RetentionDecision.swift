package import Entitlements
import FoundationEssentials
import Identifiers

/// What Apple's real-time request says, as the rules read it.
package struct RetentionRequest: Sendable, Equatable {
    package var originalTransactionID: String
    package var productID: String
    /// Apple's `userLocale`, e.g. `en-US`.
    package var userLocale: String

    package init(originalTransactionID: String, productID: String, userLocale: String) {
        self.originalTransactionID = originalTransactionID
        self.productID = productID
        self.userLocale = userLocale
    }
}

/// The answer chosen for one request, and why: explained like an entitlement.
package struct RetentionDecision: Sendable, Equatable {
    /// The rule that chose, or nil: nothing matched (Apple then shows the default message).
    package var rule: String?
    package var answer: RetentionAnswer?
    package var explanation: Explanation
    /// When the subscription's current period ends: whether the customer stayed is read after it.
    package var periodEnd: Int64?
}

/// Chooses a retention answer from the rules and the customer's stored facts. Pure: `now` given,
/// and whether the offers' own rules allow a promotional offer is asked of `offerAllowed`
/// (Config/offers.json, decided by `Offers.Eligibility`); a rule whose offer is not allowed is
/// passed over, and the next rule decides.
package enum RetentionChooser {
    static let day: Int64 = 86_400_000

    package static func decide(
        _ request: RetentionRequest, rules: RetentionRules, facts: Facts, priorOffers: Int,
        policy: DerivationPolicy = DerivationPolicy(), now: Int64,
        offerAllowed: (_ offerID: String, _ productID: String) -> Explanation
    ) -> RetentionDecision {
        let status = Derivation.subscriptions(facts, policy: policy, now: now).first {
            $0.originalTransactionID.isExactly(request.originalTransactionID)
        }
        var used: [Fact] = [
            Fact("original_transaction_id", .text(request.originalTransactionID)), Fact("product_id", .text(request.productID)),
            Fact("user_locale", .text(request.userLocale)), Fact("compared_at", .time(now)),
        ]
        guard let status else {
            return RetentionDecision(
                rule: nil, answer: nil,
                explanation: Explanation(
                    rule: "subscription_unknown",
                    decision:
                        "No answer: receiptd holds no purchase \(request.originalTransactionID), so Apple shows the default message.",
                    facts: used),
                periodEnd: nil)
        }
        let state = Traits(status: status, facts: facts, now: now)
        used += [
            Fact("state", .text(status.state.rawValue)), Fact("period_type", .text(status.periodType)),
            Fact("billing_issue", .flag(state.billingIssue)), Fact("tenure_days", .number(state.tenureDays)),
            Fact("prior_offers", .number(Int64(priorOffers))),
        ]
        if let price = status.price {
            used += [Fact("price_paid", .number(price.milliunits)), Fact("currency", .text(price.currency))]
        }
        if let storefront = state.storefront { used.append(Fact("storefront", .text(storefront))) }
        if let end = status.expiresAt { used.append(Fact("period_end", .time(end))) }
        var passedOver: [String] = []
        for rule in rules.rules {
            guard matches(rule.when, request: request, status: status, traits: state, priorOffers: priorOffers) else { continue }
            if case .promotionalOffer(_, let offer, let product, _) = rule.answer {
                let allowed = offerAllowed(offer, product ?? request.productID)
                guard allowed.rule == "offer_eligible" else {
                    passedOver.append("\(rule.name) (\(allowed.rule))")
                    continue
                }
            }
            var facts =
                used + [
                    Fact("retention_rule", .text(rule.name)), Fact("message", .text(rule.answer.message.uuidString.lowercased())),
                ]
            if !passedOver.isEmpty { facts.append(Fact("passed_over", .text(passedOver.joined(separator: ", ")))) }
            return RetentionDecision(
                rule: rule.name, answer: rule.answer,
                explanation: Explanation(
                    rule: "retention_rule_matched",
                    decision: "Answered \(rule.answer.inWords) by rule \(rule.name): its conditions hold.",
                    facts: facts),
                periodEnd: status.expiresAt)
        }
        if !passedOver.isEmpty { used.append(Fact("passed_over", .text(passedOver.joined(separator: ", ")))) }
        return RetentionDecision(
            rule: nil, answer: nil,
            explanation: Explanation(
                rule: "no_rule_matched", decision: "No answer: no rule's conditions hold, so Apple shows the default message.",
                facts: used),
            periodEnd: status.expiresAt)
    }

    /// What the conditions ask of a subscription, read once from its facts.
    struct Traits {
        var billingIssue: Bool
        var tenureDays: Int64
        var storefront: String?

        init(status: SubscriptionStatus, facts: Facts, now: Int64) {
            billingIssue = [.gracePeriod, .billingRetry, .accountHold].contains(status.state)
            let own = facts.purchases.filter { $0.originalTransactionID.isExactly(status.originalTransactionID) }
            let paid = own.filter { !$0.isTrialPeriod && !$0.commerce.isFreeTrial && $0.cancellationDate == nil }
                .reduce(Int64(0)) { total, p in
                    guard let start = p.purchaseDate, let end = p.expiresDate else { return total }
                    return total + max(0, min(end, now) - start)
                }
            tenureDays = paid / RetentionChooser.day
            storefront =
                own.max { ($0.purchaseDate ?? 0, $0.transactionID) < ($1.purchaseDate ?? 0, $1.transactionID) }?
                .commerce.storefront
        }
    }

    static func matches(
        _ c: RetentionConditions, request: RetentionRequest, status: SubscriptionStatus, traits: Traits, priorOffers: Int
    ) -> Bool {
        if let products = c.products, !products.contains(where: { $0.isExactly(request.productID) }) { return false }
        if let wanted = c.inTrial, (status.periodType == "trial") != wanted { return false }
        if let wanted = c.inIntroductoryOffer, (status.periodType == "intro") != wanted { return false }
        if let wanted = c.billingIssue, traits.billingIssue != wanted { return false }
        if let min = c.minTenureDays, traits.tenureDays < min { return false }
        if let max = c.maxTenureDays, traits.tenureDays > max { return false }
        if c.minPricePaid != nil || c.maxPricePaid != nil {
            guard let price = status.price else { return false }
            if let bounds = c.minPricePaid {
                guard let min = bounds[price.currency], price.milliunits >= min else { return false }
            }
            if let bounds = c.maxPricePaid {
                guard let max = bounds[price.currency], price.milliunits <= max else { return false }
            }
        }
        if let max = c.maxPriorOffers, priorOffers > max { return false }
        if let storefronts = c.storefronts {
            guard let s = traits.storefront, storefronts.contains(where: { $0.isExactly(s) }) else { return false }
        }
        if let locales = c.locales {
            let locale = request.userLocale
            guard
                locales.contains(where: { l in
                    locale.isExactly(l) || locale.hasPrefix(l + "-") || locale.hasPrefix(l + "_")
                })
            else { return false }
        }
        return true
    }
}
