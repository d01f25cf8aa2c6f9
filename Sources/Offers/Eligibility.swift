package import Entitlements
import Identifiers

/// Which offers an operator allows, per offer (`Config/offers.json`, Docs/offers.md).
package struct OfferRules: Sendable, Equatable {
    /// Subscription group → its products. Apple names the group on every purchase; a product the
    /// customer never bought is found here.
    package var groups: [String: [String]]
    /// Offer id (as set up in App Store Connect) → who may have it.
    package var offers: [String: OfferRule]

    package init(groups: [String: [String]] = [:], offers: [String: OfferRule] = [:]) {
        self.groups = groups
        self.offers = offers
    }

    /// The group `productID` belongs to: as configured, else as the customer's purchases of it say.
    package func group(of productID: String, facts: Facts) -> String? {
        if let configured = groups.first(where: { $0.value.contains { $0.isExactly(productID) } })?.key { return configured }
        return facts.purchases.first { $0.productID.isExactly(productID) }?.subscriptionGroupID
    }
}

/// Who may have one promotional or win-back offer.
package struct OfferRule: Sendable, Equatable {
    package enum Audience: String, Sendable, Equatable {
        /// Subscribed to the group now (entitled by one of its subscriptions).
        case current
        /// Subscribed once, not now.
        case lapsed
        /// Either.
        case any
    }

    /// The products it may be used with (empty: any product of its group).
    package var products: [String]
    package var audience: Audience
    /// Days since the group's last subscription ended (lapsed customers).
    package var minDaysSinceExpiry: Int64?
    package var maxDaysSinceExpiry: Int64?
    /// Days of paid service in the group, at least.
    package var minTenureDays: Int64?
    /// Only while a payment is failing (billing retry or grace), or never then.
    package var billingIssue: Bool?
    /// Whether a customer with a refund in the past may have it (default: no).
    package var allowRefunded: Bool
    /// Storefronts (Apple's alpha-3) it is offered in; nil: all.
    package var storefronts: [String]?
    /// At most this many signatures per customer within `perDays` (nil: ever).
    package var maxPerCustomer: Int?
    package var perDays: Int64?

    package init(
        products: [String] = [], audience: Audience = .any, minDaysSinceExpiry: Int64? = nil, maxDaysSinceExpiry: Int64? = nil,
        minTenureDays: Int64? = nil, billingIssue: Bool? = nil, allowRefunded: Bool = false, storefronts: [String]? = nil,
        maxPerCustomer: Int? = nil, perDays: Int64? = nil
    ) {
        self.products = products
        self.audience = audience
        self.minDaysSinceExpiry = minDaysSinceExpiry
        self.maxDaysSinceExpiry = maxDaysSinceExpiry
        self.minTenureDays = minTenureDays
        self.billingIssue = billingIssue
        self.allowRefunded = allowRefunded
        self.storefronts = storefronts
        self.maxPerCustomer = maxPerCustomer
        self.perDays = perDays
    }
}

/// Whether a customer may have an offer, decided from their stored facts and explained like an
/// entitlement: a stable rule id, the decision in words, the facts it used. Pure: `now` given.
package enum Eligibility {
    static let day: Int64 = 86_400_000

    /// Apple's rule for an introductory offer (a free trial or an introductory price): once per
    /// subscription group per Apple Account, so only a customer who never had an introductory or
    /// trial period in `productID`'s group, in any purchase they hold under any of their ids, nor
    /// under another app user of the same Apple Account (`sameAppleAccount`: their purchases, found
    /// by a shared `appTransactionId`). `appleGroupIDs`: Apple's identifiers of the group as stated on
    /// stored transactions of its listed products. Decisions name no transaction (the answer may go to
    /// an app's public key); the facts do.
    package static func introductory(
        productID: String, rules: OfferRules, facts: Facts, sameAppleAccount: [Purchase] = [], appleGroupIDs: Set<String> = [],
        now: Int64
    ) -> Explanation {
        guard let group = rules.group(of: productID, facts: facts) else {
            return Explanation(
                rule: "unknown_group",
                decision:
                    "Not eligible: \(productID)'s subscription group is unknown (name it in Config/offers.json `groups`), so Apple's once-per-group rule cannot be checked.",
                facts: [Fact("product_id", .text(productID)), Fact("compared_at", .time(now))])
        }
        let inGroup = purchases(in: group, rules: rules, facts: facts, appleGroupIDs: appleGroupIDs)
        let used: [Fact] = [
            Fact("product_id", .text(productID)), Fact("subscription_group", .text(group)),
            Fact("purchases_in_group", .number(Int64(inGroup.count))), Fact("compared_at", .time(now)),
        ]
        func introductory(_ p: Purchase) -> Bool { p.isTrialPeriod || p.isInIntroOfferPeriod }
        func what(_ p: Purchase) -> String { p.isTrialPeriod ? "a free trial" : "an introductory price" }
        if let had = inGroup.first(where: introductory) {
            return Explanation(
                rule: "introductory_offer_used",
                decision: "Not eligible: a purchase of \(had.productID) already had \(what(had)) in subscription group \(group).",
                facts: used + [Fact("transaction_id", .text(had.transactionID))])
        }
        let account = Facts(purchases: sameAppleAccount)
        if let had = purchases(in: group, rules: rules, facts: account, appleGroupIDs: appleGroupIDs).first(where: introductory) {
            return Explanation(
                rule: "introductory_offer_used_by_apple_account",
                decision:
                    "Not eligible: the same Apple Account, under another app user, already had \(what(had)) (\(had.productID)) in subscription group \(group); Apple allows one per group per Apple Account.",
                facts: used + [Fact("transaction_id", .text(had.transactionID))]
                    + [Fact.text("app_transaction_id", had.appTransactionID)].compactMap { $0 })
        }
        return Explanation(
            rule: "introductory_offer_eligible",
            decision:
                "Eligible: no purchase in subscription group \(group), of this Apple Account, had a free trial or an introductory price.",
            facts: used)
    }

    /// The operator's rule for promotional or win-back offer `offerID` on `productID`.
    /// `issued`: when this customer was given this offer's signature before (epoch ms).
    package static func promotional(
        offerID: String, productID: String, rules: OfferRules, facts: Facts, storefront: String?, issued: [Int64],
        policy: DerivationPolicy = DerivationPolicy(), appleGroupIDs: Set<String> = [], now: Int64
    ) -> Explanation {
        var used: [Fact] = [
            Fact("offer_id", .text(offerID)), Fact("product_id", .text(productID)), Fact("compared_at", .time(now)),
        ]
        func no(_ rule: String, _ why: String, _ more: [Fact] = []) -> Explanation {
            Explanation(rule: rule, decision: "Not eligible: " + why, facts: used + more)
        }
        guard let rule = rules.offers[offerID] else {
            return no("unknown_offer", "offer \(offerID) is not configured (Config/offers.json `offers`).")
        }
        guard let group = rules.group(of: productID, facts: facts) else {
            return no("unknown_group", "\(productID)'s subscription group is unknown (Config/offers.json `groups`).")
        }
        used.append(Fact("subscription_group", .text(group)))
        if !rule.products.isEmpty && !rule.products.contains(where: { $0.isExactly(productID) }) {
            return no("product_not_offered", "offer \(offerID) is not for \(productID).")
        }
        let inGroup = purchases(in: group, rules: rules, facts: facts, appleGroupIDs: appleGroupIDs)
        let statuses = Derivation.subscriptions(facts, policy: policy, now: now).filter { s in
            inGroup.contains { $0.originalTransactionID.isExactly(s.originalTransactionID) }
        }
        let current = statuses.contains { $0.isEntitled }
        let lastEnd = inGroup.compactMap(\.expiresDate).max()
        used.append(Fact("subscribed_now", .flag(current)))
        if let lastEnd { used.append(Fact("last_expiry", .time(lastEnd))) }
        switch rule.audience {
        case .current where !current: return no("not_subscribed", "offer \(offerID) is for current subscribers of \(group).")
        case .lapsed where current || inGroup.isEmpty:
            return no(
                current ? "still_subscribed" : "never_subscribed",
                current
                    ? "offer \(offerID) is for lapsed subscribers, and this one is subscribed."
                    : "offer \(offerID) is for lapsed subscribers, and this customer never subscribed to \(group).")
        default: break
        }
        if !current, let lastEnd, rule.minDaysSinceExpiry != nil || rule.maxDaysSinceExpiry != nil {
            let days = (now - lastEnd) / day
            used.append(Fact("days_since_expiry", .number(days)))
            if let min = rule.minDaysSinceExpiry, days < min {
                return no("too_soon_after_expiry", "the last subscription ended \(days) days ago; the offer waits \(min).")
            }
            if let max = rule.maxDaysSinceExpiry, days > max {
                return no("too_long_after_expiry", "the last subscription ended \(days) days ago, more than the offer's \(max).")
            }
        }
        if let min = rule.minTenureDays {
            let paid = inGroup.filter { !$0.isTrialPeriod && $0.cancellationDate == nil }.reduce(Int64(0)) { total, p in
                guard let start = p.purchaseDate, let end = p.expiresDate else { return total }
                return total + max(0, Swift.min(end, now) - start)
            }
            used.append(Fact("tenure_days", .number(paid / day)))
            if paid / day < min {
                return no("tenure_too_short", "\(paid / day) days of paid service in \(group); the offer asks \(min).")
            }
        }
        if let wanted = rule.billingIssue {
            let failing = statuses.contains { [.gracePeriod, .billingRetry, .accountHold].contains($0.state) }
            used.append(Fact("billing_issue", .flag(failing)))
            if failing != wanted {
                return no(
                    wanted ? "no_billing_issue" : "billing_issue",
                    wanted
                        ? "the offer is for customers whose payment is failing."
                        : "the offer is not for customers whose payment is failing.")
            }
        }
        if !rule.allowRefunded, let refunded = facts.purchases.first(where: { $0.cancellationDate != nil && !$0.isUpgraded }) {
            return no(
                "refunded_before", "a purchase of \(refunded.productID) was refunded, and the offer excludes refunded customers.",
                [Fact("transaction_id", .text(refunded.transactionID))])
        }
        if let allowed = rule.storefronts {
            guard let storefront, allowed.contains(where: { $0.isExactly(storefront) }) else {
                return no("storefront_not_offered", "the offer is not available in storefront \(storefront ?? "(unknown)").")
            }
            used.append(Fact("storefront", .text(storefront)))
        }
        if let max = rule.maxPerCustomer {
            let since = rule.perDays.map { now - $0 * day } ?? .min
            let count = issued.filter { $0 >= since }.count
            used.append(Fact("given_before", .number(Int64(count))))
            if count >= max {
                return no(
                    "offer_limit_reached",
                    "offer \(offerID) was given \(count) times\(rule.perDays.map { " in the last \($0) days" } ?? ""); at most \(max)."
                )
            }
        }
        return Explanation(
            rule: "offer_eligible", decision: "Eligible: every rule of offer \(offerID) holds.", facts: used)
    }

    /// The customer's purchases in `group`: of a product it lists, or stated by Apple in the
    /// group (its `subscriptionGroupIdentifier` is the group's name, one of `appleGroupIDs`, or one
    /// Apple stated on a purchase of a listed product here), so a product the file does not list
    /// is in its group all the same.
    static func purchases(in group: String, rules: OfferRules, facts: Facts, appleGroupIDs: Set<String> = []) -> [Purchase] {
        let products = rules.groups[group] ?? []
        func listed(_ p: Purchase) -> Bool { products.contains { $0.isExactly(p.productID) } }
        var ids = appleGroupIDs
        ids.insert(group)
        for p in facts.purchases where listed(p) { if let id = p.subscriptionGroupID { ids.insert(id) } }
        return facts.purchases.filter { p in listed(p) || p.subscriptionGroupID.map { ids.contains($0) } ?? false }
    }
}
