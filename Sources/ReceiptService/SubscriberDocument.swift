import AppStore
import Entitlements
import FoundationEssentials
import Storage

/// The subscriber document of issue 3's contract, built from storage at `now`:
/// `{"app_user_id", "request_date", "entitlements", "subscriptions", "non_subscriptions"}`.
/// Times are RFC 3339 UTC strings or null.
enum SubscriberDocument {
    static func build(_ subscriber: SubscriberRecord, rules: EntitlementRules, now: Int64) -> JSONValue {
        let subs = Derivation.subscriptions(
            purchases: RecordMapping.purchases(subscriber), renewals: RecordMapping.renewals(subscriber), now: now)
        let others = Derivation.nonSubscriptions(purchases: RecordMapping.purchases(subscriber))

        var entitlements: [String: JSONValue] = [:]
        for (name, grant) in rules.grants(subscriptions: subs, purchases: others) {
            switch grant.source {
            case .subscription(let s): entitlements[name] = .object(common(s))
            case .purchase(let p): entitlements[name] = .object(common(p))
            }
        }
        // One entry per product: the best of its subscriptions (entitling first, then latest expiry).
        var byProduct: [String: SubscriptionStatus] = [:]
        for s in subs {
            if let current = byProduct[s.productID],
                (current.isEntitled ? 1 : 0, current.expiresAt ?? 0) >= (s.isEntitled ? 1 : 0, s.expiresAt ?? 0)
            {
                continue
            }
            byProduct[s.productID] = s
        }
        var subscriptions: [String: JSONValue] = [:]
        for (product, s) in byProduct {
            var fields = common(s)
            fields["purchased_at"] = time(s.purchasedAt)
            fields["original_purchased_at"] = time(s.originalPurchasedAt)
            fields["refunded_at"] = time(s.refundedAt)
            fields["unsubscribe_detected_at"] = time(s.unsubscribeDetectedAt)
            fields["billing_issue_detected_at"] = time(s.billingIssueDetectedAt)
            fields["store_transaction_id"] = .string(s.storeTransactionID)
            subscriptions[product] = .object(fields)
        }
        var nonSubscriptions: [String: JSONValue] = [:]
        for p in others {
            let item: JSONValue = .object([
                "transaction_id": .string(p.transactionID), "purchased_at": time(p.purchasedAt),
                "refunded_at": time(p.refundedAt),
            ])
            nonSubscriptions[p.productID] = .array((nonSubscriptions[p.productID]?.array ?? []) + [item])
        }
        return .object([
            "app_user_id": .string(subscriber.appUserID), "request_date": time(now),
            "entitlements": .object(entitlements), "subscriptions": .object(subscriptions),
            "non_subscriptions": .object(nonSubscriptions),
        ])
    }

    private static func common(_ s: SubscriptionStatus) -> [String: JSONValue] {
        [
            "active": .bool(s.isEntitled), "state": .string(s.state.rawValue), "product_id": .string(s.productID),
            "expires_at": time(s.expiresAt), "grace_period_expires_at": time(s.gracePeriodExpiresAt),
            "will_renew": .bool(s.willRenew), "period_type": .string(s.periodType), "ownership": .string(s.ownership),
            "original_transaction_id": .string(s.originalTransactionID), "environment": .string(s.environment),
        ]
    }

    private static func common(_ p: NonSubscriptionPurchase) -> [String: JSONValue] {
        [
            "active": .bool(p.isEntitled), "state": .string(p.isEntitled ? "active" : "refunded"),
            "product_id": .string(p.productID), "expires_at": .null, "grace_period_expires_at": .null, "will_renew": .bool(false),
            "period_type": .string("normal"), "ownership": .string(p.ownership),
            "original_transaction_id": .string(p.transactionID),
            "environment": .string(p.environment),
        ]
    }

    /// RFC 3339 UTC with milliseconds, or null.
    static func time(_ ms: Int64?) -> JSONValue {
        guard let ms else { return .null }
        let date = Date(timeIntervalSince1970: Double(ms) / 1000)
        return .string(date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true)))
    }
}
