import Identifiers

/// Which products grant which entitlement, from configuration, e.g.
/// `{"premium": ["monthly", "yearly", "lifetime"]}`.
package struct EntitlementRules: Sendable, Equatable {
    package let products: [String: [String]]
    /// Entitlement → who keeps it for life for having got the app before a version.
    package let grandfathering: [String: Grandfathering]

    package init(_ products: [String: [String]], grandfathering: [String: Grandfathering] = [:]) {
        self.products = products
        self.grandfathering = grandfathering
    }

    /// What grants one entitlement now, and why.
    package struct Grant: Sendable, Equatable {
        package enum Source: Sendable, Equatable {
            case subscription(SubscriptionStatus)
            case purchase(NonSubscriptionPurchase)
            /// Given by support (``Promotion``), as of the `now` of the grant.
            case promotional(Promotion, active: Bool)
            /// Kept for life: the app was first got before a version (``Grandfathering``).
            case grandfathered(AppTransaction, Grandfathering)
        }
        package var source: Source
        package var explanation: Explanation
        package var isActive: Bool {
            switch source {
            case .subscription(let s): s.isEntitled
            case .purchase(let p): p.isEntitled
            case .promotional(_, let active): active
            case .grandfathered: true
            }
        }
    }

    /// For each configured entitlement with any matching purchase: the best grant. An entitling
    /// one wins over one that does not; among entitling ones, a lasting purchase, then the latest
    /// expiry; among the rest, the most recent. Consumables never grant. Entitlements with no
    /// purchase at all are absent.
    ///
    /// A promotion grants the entitlement it names, configured or not; one that has not started
    /// yet is left out. A purchase that entitles wins over a promotion only by a later end.
    ///
    /// A grandfathered entitlement is granted for life by an AppTransaction from before its
    /// version, like a lasting purchase; an AppTransaction that does not qualify is no candidate.
    package func grants(
        subscriptions: [SubscriptionStatus], purchases: [NonSubscriptionPurchase], promotions: [Promotion] = [],
        appTransactions: [AppTransaction] = [], now: Int64 = 0
    ) -> [String: Grant] {
        var result: [String: Grant] = [:]
        var names = Set(products.keys)
        for (name, rule) in grandfathering where appTransactions.contains(where: { rule.holds(for: $0).0 }) {
            names.insert(name)
        }
        for p in promotions where p.startsAt <= now { names.insert(p.entitlement) }
        for name in names {
            let productIDs = products[name] ?? []
            var candidates: [Grant.Source] =
                subscriptions.filter { s in productIDs.contains { $0.isExactly(s.productID) } }.map { .subscription($0) }
                + purchases.filter { p in productIDs.contains { $0.isExactly(p.productID) } && p.kind != .consumable }
                .map { .purchase($0) }
            candidates += promotions.filter { $0.startsAt <= now && $0.entitlement.isExactly(name) }
                .map { .promotional($0, active: $0.isActive(at: now)) }
            if let rule = grandfathering[name] {
                candidates += appTransactions.filter { rule.holds(for: $0).0 }.map { .grandfathered($0, rule) }
            }
            guard let best = candidates.max(by: { Self.rank($0) < Self.rank($1) }) else { continue }
            result[name] = Grant(
                source: best, explanation: Self.explain(best, candidates: candidates.count, products: productIDs, now: now))
        }
        return result
    }

    private static func explain(_ source: Grant.Source, candidates: Int, products: [String], now: Int64) -> Explanation {
        let (active, product, id, inner, store): (Bool, String, String, Explanation, Store)
        switch source {
        case .subscription(let s):
            (active, product, id, inner, store) = (s.isEntitled, s.productID, s.originalTransactionID, s.explanation, s.store)
        case .purchase(let p):
            (active, product, id, inner, store) = (p.isEntitled, p.productID, p.transactionID, p.explanation, p.store)
        case .promotional(let p, let active):
            let inner = p.explanation(at: now)
            return Explanation(
                rule: active ? "granted_by_promotion" : "no_entitling_purchase",
                decision: active
                    ? "Granted by promotion \(p.id). \(inner.decision)"
                    : "Not granted: none of the \(candidates) purchase(s) or promotion(s) entitles now; the best is promotion \(p.id). \(inner.decision)",
                facts: [Fact("source_rule", .text(inner.rule)), Fact("candidates", .number(Int64(candidates)))] + inner.facts)
        case .grandfathered(let app, let rule):
            var facts = [
                Fact("app_transaction_id", .text(app.appTransactionID)), Fact("before_version", .text(rule.beforeVersion)),
                Fact("candidates", .number(Int64(candidates))),
            ]
            if let version = app.originalApplicationVersion { facts.append(Fact("original_application_version", .text(version))) }
            if let platform = app.originalPlatform { facts.append(Fact("original_platform", .text(platform))) }
            if let date = app.originalPurchaseDate { facts.append(Fact("original_purchase_date", .time(date))) }
            return Explanation(
                rule: "grandfathered",
                decision:
                    "Granted for life: \(rule.holds(for: app).1) (AppTransaction \(app.appTransactionID); Config/entitlements.json grandfathers customers who got the app before \(rule.beforeVersion)).",
                facts: facts)
        }
        let kind = if case .subscription = source { "subscription" } else { "purchase" }
        // Which store: the same person may hold purchases from both.
        let named = "\(store.rules.purchaseNoun) \(kind)"
        let decision =
            active
            ? "Granted by the \(named) of \(product) (\(id)). \(inner.decision)"
            : "Not granted: none of the \(candidates) purchase(s) of \(products.joined(separator: ", ")) entitles now; the best is the \(named) of \(product) (\(id)). \(inner.decision)"
        return Explanation(
            rule: active ? "granted_by_\(kind)" : "no_entitling_purchase", decision: decision,
            facts: [
                Fact("product_id", .text(product)), Fact("store", .text(store.rawValue)),
                Fact(kind == "subscription" ? "original_transaction_id" : "transaction_id", .text(id)),
                Fact("source_rule", .text(inner.rule)), Fact("candidates", .number(Int64(candidates))),
                Fact("products", .text(products.joined(separator: ","))),
            ]
                + inner.facts.filter {
                    $0.name != "product_id" && $0.name != "transaction_id"
                        || kind == "subscription" && $0.name == "transaction_id"
                })
    }

    /// (entitled, lasts forever, expiry or purchase time, id): larger is better.
    private static func rank(_ source: Grant.Source) -> (Int, Int, Int64, String) {
        switch source {
        case .subscription(let s):
            return (
                s.isEntitled ? 1 : 0, 0, s.gracePeriodExpiresAt ?? s.expiresAt ?? 0, s.originalTransactionID + "/" + s.productID
            )
        case .purchase(let p):
            let lasting = p.isEntitled && p.expiresAt == nil
            return (p.isEntitled ? 1 : 0, lasting ? 1 : 0, p.expiresAt ?? p.purchasedAt ?? 0, p.transactionID)
        case .promotional(let p, let active):
            // Among ended ones, the one that ended last; ids compare as numbers of equal width.
            let id = String(p.id)
            return (active ? 1 : 0, 0, p.endsAt, "promotion:" + String(repeating: "0", count: max(0, 20 - id.count)) + id)
        case .grandfathered(let app, _):
            // Lasting, like a non-consumable; after one (a purchase names its product).
            return (1, 1, app.originalPurchaseDate ?? 0, "app:" + app.appTransactionID)
        }
    }
}
