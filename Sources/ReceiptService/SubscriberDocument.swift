import AppStore
import Entitlements
import FoundationEssentials
import Storage

/// The subscriber document of issue 3's contract, built from storage at `now`:
/// `{"app_user_id", "request_date", "entitlements", "subscriptions", "non_subscriptions"}`.
/// Times are RFC 3339 UTC strings or null.
enum SubscriberDocument {
    static func build(_ subscriber: SubscriberRecord, rules: EntitlementRules, now: Int64) -> JSONValue {
        let facts = Facts(
            purchases: RecordMapping.purchases(subscriber),
            renewals: RecordMapping.renewals(subscriber).map { RenewalObservation(observedAt: now, renewal: $0) })
        let subs = Derivation.subscriptions(facts, now: now)
        let others = Derivation.nonSubscriptions(facts, now: now)

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

    /// RFC 3339 UTC with milliseconds (`2026-11-22T06:01:48.618Z`), or null. Computed directly
    /// (days → civil date, H. Hinnant's algorithm): no formatter, no locale, no allocation beyond the string.
    static func time(_ ms: Int64?) -> JSONValue {
        guard let ms else { return .null }
        let (days, msOfDay) = ms.quotientAndRemainder(dividingBy: 86_400_000)
        let (d, t) = msOfDay < 0 ? (days - 1, msOfDay + 86_400_000) : (days, msOfDay)
        let z = d + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = doy - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        let year = yoe + era * 400 + (month <= 2 ? 1 : 0)
        func pad(_ n: Int64, _ width: Int) -> String {
            let s = String(n)
            return String(repeating: "0", count: max(0, width - s.count)) + s
        }
        return .string(
            "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))T\(pad(t / 3_600_000, 2)):\(pad(t / 60_000 % 60, 2)):"
                + "\(pad(t / 1000 % 60, 2)).\(pad(t % 1000, 3))Z")
    }
}
