import Identifiers

/// Which products grant which entitlement, from configuration, e.g.
/// `{"premium": ["monthly", "yearly", "lifetime"]}`.
public struct EntitlementRules: Sendable, Equatable {
    public let products: [String: [String]]

    public init(_ products: [String: [String]]) { self.products = products }

    /// What grants one entitlement now, and why.
    public struct Grant: Sendable, Equatable {
        public enum Source: Sendable, Equatable {
            case subscription(SubscriptionStatus)
            case purchase(NonSubscriptionPurchase)
        }
        public var source: Source
        public var explanation: Explanation
        public var isActive: Bool {
            switch source {
            case .subscription(let s): s.isEntitled
            case .purchase(let p): p.isEntitled
            }
        }
    }

    /// For each configured entitlement with any matching purchase: the best grant. An entitling
    /// one wins over one that does not; among entitling ones, a lasting purchase, then the latest
    /// expiry; among the rest, the most recent. Consumables never grant. Entitlements with no
    /// purchase at all are absent.
    public func grants(subscriptions: [SubscriptionStatus], purchases: [NonSubscriptionPurchase]) -> [String: Grant] {
        var result: [String: Grant] = [:]
        for (name, productIDs) in products {
            let candidates: [Grant.Source] =
                subscriptions.filter { s in productIDs.contains { $0.isExactly(s.productID) } }.map { .subscription($0) }
                + purchases.filter { p in productIDs.contains { $0.isExactly(p.productID) } && p.kind != .consumable }
                .map { .purchase($0) }
            guard let best = candidates.max(by: { Self.rank($0) < Self.rank($1) }) else { continue }
            result[name] = Grant(
                source: best, explanation: Self.explain(best, candidates: candidates.count, products: productIDs))
        }
        return result
    }

    private static func explain(_ source: Grant.Source, candidates: Int, products: [String]) -> Explanation {
        let (active, product, id, inner): (Bool, String, String, Explanation) =
            switch source {
            case .subscription(let s): (s.isEntitled, s.productID, s.originalTransactionID, s.explanation)
            case .purchase(let p): (p.isEntitled, p.productID, p.transactionID, p.explanation)
            }
        let kind = if case .subscription = source { "subscription" } else { "purchase" }
        let decision =
            active
            ? "Granted by the \(kind) of \(product) (\(id)). \(inner.decision)"
            : "Not granted: none of the \(candidates) purchase(s) of \(products.joined(separator: ", ")) entitles now; the best is the \(kind) of \(product) (\(id)). \(inner.decision)"
        return Explanation(
            rule: active ? "granted_by_\(kind)" : "no_entitling_purchase", decision: decision,
            facts: [
                Fact("product_id", .text(product)),
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
        }
    }
}
