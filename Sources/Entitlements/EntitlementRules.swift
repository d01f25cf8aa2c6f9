/// Which products grant which entitlement, from configuration, e.g.
/// `{"premium": ["monthly", "yearly", "lifetime"]}`.
public struct EntitlementRules: Sendable, Equatable {
    public let products: [String: [String]]

    public init(_ products: [String: [String]]) { self.products = products }

    /// What grants one entitlement now.
    public struct Grant: Sendable, Equatable {
        public enum Source: Sendable, Equatable {
            case subscription(SubscriptionStatus)
            case purchase(NonSubscriptionPurchase)
        }
        public var source: Source
        public var isActive: Bool {
            switch source {
            case .subscription(let s): s.isEntitled
            case .purchase(let p): p.isEntitled
            }
        }
    }

    /// For each configured entitlement with any matching purchase: the best grant. An entitling
    /// one wins over one that does not; among entitling ones, a lasting purchase, then the latest
    /// expiry; among the rest, the most recent. Entitlements with no purchase at all are absent.
    public func grants(subscriptions: [SubscriptionStatus], purchases: [NonSubscriptionPurchase]) -> [String: Grant] {
        var result: [String: Grant] = [:]
        for (name, productIDs) in products {
            let candidates: [Grant] =
                subscriptions.filter { productIDs.contains($0.productID) }.map { Grant(source: .subscription($0)) }
                + purchases.filter { productIDs.contains($0.productID) }.map { Grant(source: .purchase($0)) }
            guard let best = candidates.max(by: { Self.rank($0) < Self.rank($1) }) else { continue }
            result[name] = best
        }
        return result
    }

    /// (entitled, lasts forever, expiry or purchase time, id): larger is better.
    private static func rank(_ g: Grant) -> (Int, Int, Int64, String) {
        switch g.source {
        case .subscription(let s):
            return (s.isEntitled ? 1 : 0, 0, s.gracePeriodExpiresAt ?? s.expiresAt ?? 0, s.originalTransactionID)
        case .purchase(let p):
            return (p.isEntitled ? 1 : 0, p.isEntitled ? 1 : 0, p.purchasedAt ?? 0, p.transactionID)
        }
    }
}
