import Analytics
import AppStore
package import Entitlements
package import Identifiers
package import JSON
import Storage

/// How purchases become entitlements: the configured rules, product kinds and policy knobs.
package struct EntitlementSettings: Sendable {
    package var rules: EntitlementRules
    package var catalog: Catalog
    package var policy: DerivationPolicy

    package init(rules: EntitlementRules, catalog: Catalog, policy: DerivationPolicy) {
        self.rules = rules
        self.catalog = catalog
        self.policy = policy
    }
}

/// The subscriber document (Docs/api.md "The subscriber document"), built from storage at `now`:
/// `{"aliases", "app_user_id", "request_date", "version", "entitlements", "subscriptions", "non_subscriptions"}`.
/// Times are RFC 3339 UTC strings or null.
package struct SubscriberDocument: Sendable {
    /// The subscriber's canonical id (an alias reads as the subscriber it names).
    package let appUserID: String
    /// Everything but `request_date` and `version`: what the fingerprint covers.
    let content: [Identifier: JSONValue]
    /// FNV-1a 64 of `content`'s canonical JSON, in hex: changes exactly when the content does.
    let fingerprint: String
    /// `content`'s canonical JSON, written once, in two parts: up to `subscriptions` (without the
    /// closing brace), and the value of `subscriptions`, the last key in sorted order. The
    /// fingerprint, the response body and the cached template are cut from these bytes.
    private let head: [UInt8]
    private let subscriptionsJSON: [UInt8]
    /// Why each entitlement, subscription and purchase reads as it does: JSON only when asked for
    /// (``explained``).
    private let explanations: Explanations
    /// The first instant after `now` at which the content may read differently with the same
    /// facts (an expiry, a grace period's end, …); nil when no instant lies ahead.
    let changesAt: Int64?
    /// Each product's state as this document reads it, for the overview (``ProductStateStore``).
    let productStates: [ProductStateStore.Entry]

    /// `appUserID`'s document at `now`, from their facts (a subscriber's `pinnedFacts`).
    init(appUserID: String, facts: Facts, settings: EntitlementSettings, now: Int64) {
        let subs = Derivation.subscriptions(facts, catalog: settings.catalog, policy: settings.policy, now: now)
        let others = Derivation.nonSubscriptions(facts, catalog: settings.catalog, policy: settings.policy, now: now)
        var entitlements: [Identifier: JSONValue] = [:]
        var explanations = Explanations()
        var promotional: [ProductStateStore.Entry] = []
        for (name, grant) in settings.rules.grants(
            subscriptions: subs, purchases: others, promotions: facts.promotions, appTransactions: facts.appTransactions,
            now: now)
        {
            let fields =
                switch grant.source {
                case .subscription(let s): Self.common(s)
                case .purchase(let p): Self.common(p)
                case .promotional(let p, _): Self.common(p, at: now)
                case .grandfathered(let app, _): Self.common(app)
                }
            if case .promotional(let p, _) = grant.source {
                promotional.append(ProductStateStore.Entry(kind: "promotional", productID: name, state: p.state(at: now)))
            }
            entitlements[Identifier(name)] = .object(fields)
            explanations.entitlements[Identifier(name)] = grant.explanation
        }
        // One entry per product: the best of its subscriptions (entitling first, then latest expiry, then id).
        var byProduct: [Identifier: SubscriptionStatus] = [:]
        for s in subs {
            if let current = byProduct[Identifier(s.productID)],
                (current.isEntitled ? 1 : 0, current.expiresAt ?? 0, current.originalTransactionID)
                    >= (s.isEntitled ? 1 : 0, s.expiresAt ?? 0, s.originalTransactionID)
            {
                continue
            }
            byProduct[Identifier(s.productID)] = s
        }
        var subscriptions: [Identifier: JSONValue] = [:]
        for (product, s) in byProduct {
            var fields = Self.common(s)
            fields["purchased_at"] = Self.time(s.purchasedAt)
            fields["original_purchased_at"] = Self.time(s.originalPurchasedAt)
            fields["refunded_at"] = Self.time(s.refundedAt)
            fields["unsubscribe_detected_at"] = Self.time(s.unsubscribeDetectedAt)
            fields["billing_issue_detected_at"] = Self.time(s.billingIssueDetectedAt)
            fields["store_transaction_id"] = .string(s.storeTransactionID)
            fields["price"] = Self.price(s.price)
            fields["renews_into"] = s.renewsInto.map(JSONValue.string) ?? .null
            fields["expiration_reason"] = s.expirationReason.map { .string($0.rawValue) } ?? .null
            fields["price_increase"] = s.priceIncrease.map(JSONValue.string) ?? .null
            fields["offer"] =
                s.offer.map { .object(["type": .string($0.type), "id": $0.id.map(JSONValue.string) ?? .null]) } ?? .null
            // Only while paused (Google Play): other documents read as they did.
            if let resumes = s.resumesAt { fields["resumes_at"] = Self.time(resumes) }
            // Only where Apple stated it (signed transactions, 2025 on): other documents read as they did.
            if let app = s.appTransactionID { fields["app_transaction_id"] = .string(app) }
            if let refund = s.refund { Self.add(refund, to: &fields) }
            if let commitment = s.commitment { fields["commitment"] = Self.json(commitment) }
            subscriptions[product] = .object(fields)
            explanations.subscriptions[product] = s.explanation
        }
        var nonSubscriptions: [Identifier: [JSONValue]] = [:]
        for p in others {
            var fields: [Identifier: JSONValue] = [
                "transaction_id": .string(p.transactionID), "product_type": .string(p.kind.name), "active": .bool(p.isEntitled),
                "purchased_at": Self.time(p.purchasedAt), "expires_at": Self.time(p.expiresAt),
                "refunded_at": Self.time(p.refundedAt),
                "quantity": p.quantity.map { .int($0) } ?? .null, "ownership": .string(p.ownership),
                "price": Self.price(p.price), "store": .string(p.store.rawValue),
            ]
            if let app = p.appTransactionID { fields["app_transaction_id"] = .string(app) }
            if let refund = p.refund {
                Self.add(refund, to: &fields)
                if let units = p.refundedQuantity { fields["refunded_quantity"] = .int(units) }
            }
            nonSubscriptions[Identifier(p.productID), default: []].append(.object(fields))
            explanations.nonSubscriptions[Identifier(p.productID), default: []].append(p.explanation)
        }
        var states = byProduct.values.map {
            ProductStateStore.Entry(kind: "subscription", productID: $0.productID, state: $0.state.rawValue)
        }
        var seen: Set<Identifier> = []
        for p in others where seen.insert(Identifier(p.kind.name + ":" + p.productID)).inserted {  // newest first
            states.append(ProductStateStore.Entry(kind: p.kind.name, productID: p.productID, state: Self.state(p)))
        }
        productStates = states + promotional
        self.appUserID = appUserID
        content = [
            "app_user_id": .string(appUserID), "aliases": .array(facts.aliases.map { .string($0.appUserID) }),
            "entitlements": .object(entitlements),
            "subscriptions": .object(subscriptions), "non_subscriptions": .object(nonSubscriptions.mapValues(JSONValue.array)),
        ]
        self.explanations = explanations
        var before = content
        let subscriptionsValue = before.removeValue(forKey: "subscriptions") ?? .object([:])
        head = Array(JSONValue.object(before).jsonBytes.dropLast())  // `}`
        subscriptionsJSON = subscriptionsValue.jsonBytes
        fingerprint = Self.fnv1a64([head, Array(#","subscriptions":"#.utf8), subscriptionsJSON, [UInt8(ascii: "}")]])
        var instants = facts.instants
        for s in subs {
            for t in [s.expiresAt, s.gracePeriodExpiresAt, s.purchasedAt, s.refundedAt] { if let t { instants.append(t) } }
        }
        for p in others {
            for t in [p.expiresAt, p.purchasedAt, p.refundedAt] { if let t { instants.append(t) } }
        }
        changesAt = instants.filter { $0 > now }.min()
    }

    /// ``rendered(version:now:explain:)`` without explanations, split around the value of
    /// `request_date` so a cached document is sent at any instant with two copies: `head`, the
    /// quoted time, `tail`. The keys stay in `jsonBytes`' sorted order.
    func template(version: Int64) -> (head: [UInt8], tail: [UInt8]) {
        (
            head + #","request_date":""#.utf8,
            Array(#"","subscriptions":"#.utf8) + subscriptionsJSON + #","version":\#(version)}"#.utf8
        )
    }

    /// ``rendered(version:now:explain:)`` without explanations, as JSON bytes, from the bytes
    /// written for the fingerprint.
    package func body(version: Int64, now: Int64) -> [UInt8] {
        let (before, after) = template(version: version)
        return Self.body(head: before, now: now, tail: after)
    }

    /// A ``template(version:)``'s two parts around the time `now`: the document as sent.
    static func body(head: some Collection<UInt8>, now: Int64, tail: some Collection<UInt8>) -> [UInt8] {
        var body: [UInt8] = []
        body.reserveCapacity(head.count + 24 + tail.count)
        body += head
        body += CivilTime.rfc3339(now).utf8
        body += tail
        return body
    }

    struct Explanations: Sendable {
        var entitlements: [Identifier: Explanation] = [:]
        var subscriptions: [Identifier: Explanation] = [:]
        var nonSubscriptions: [Identifier: [Explanation]] = [:]
    }

    /// The content with an `explanation` beside each entitlement, subscription and purchase.
    var explained: [Identifier: JSONValue] {
        func withExplanation(_ entry: JSONValue, _ explanation: Explanation?) -> JSONValue {
            guard case .object(var fields) = entry, let explanation else { return entry }
            fields["explanation"] = Self.json(explanation)
            return .object(fields)
        }
        var explained = content
        if case .object(let entries)? = content["entitlements"] {
            explained["entitlements"] = .object(
                Dictionary(uniqueKeysWithValues: entries.map { ($0, withExplanation($1, explanations.entitlements[$0])) }))
        }
        if case .object(let entries)? = content["subscriptions"] {
            explained["subscriptions"] = .object(
                Dictionary(uniqueKeysWithValues: entries.map { ($0, withExplanation($1, explanations.subscriptions[$0])) }))
        }
        if case .object(let entries)? = content["non_subscriptions"] {
            explained["non_subscriptions"] = .object(
                Dictionary(
                    uniqueKeysWithValues: entries.map { product, list in
                        guard case .array(let purchases) = list, let reasons = explanations.nonSubscriptions[product] else {
                            return (product, list)
                        }
                        return (product, .array(zip(purchases, reasons).map { withExplanation($0, $1) }))
                    }))
        }
        return explained
    }

    /// Every purchase identifier the document names (``PurchaseIdentifiers``).
    package var identifiers: Set<Identifier> { PurchaseIdentifiers.all(in: .object(content)) }

    /// What an answer may name when `proof` was posted: the purchases it names, whole.
    package func visible(provenBy proof: Set<Identifier>) -> Set<Identifier> {
        PurchaseIdentifiers.widened(proof, in: .object(content))
    }

    /// The document as sent: the content (explained or not) with `request_date` and `version`.
    package func rendered(version: Int64, now: Int64, explain: Bool) -> JSONValue {
        var fields = explain ? explained : content
        fields["request_date"] = Self.time(now)
        fields["version"] = .int(version)
        return .object(fields)
    }

    private static func common(_ s: SubscriptionStatus) -> [Identifier: JSONValue] {
        [
            "active": .bool(s.isEntitled), "state": .string(s.state.rawValue), "product_id": .string(s.productID),
            "store": .string(s.store.rawValue),
            "expires_at": time(s.expiresAt), "grace_period_expires_at": time(s.gracePeriodExpiresAt),
            "will_renew": .bool(s.willRenew), "period_type": .string(s.periodType), "ownership": .string(s.ownership),
            "original_transaction_id": .string(s.originalTransactionID), "environment": .string(s.environment),
        ]
    }

    private static func state(_ p: NonSubscriptionPurchase) -> String {
        p.isEntitled ? "active" : p.refund.map { $0.isFamilyRevocation ? "revoked" : "refunded" } ?? "expired"
    }

    /// `{"billing_period", "billing_periods", "expires_at", "price", "will_renew"}` of a commitment plan.
    static func json(_ c: Commitments.Status) -> JSONValue {
        .object([
            "billing_period": c.billingPeriod.map { .int($0) } ?? .null,
            "billing_periods": c.billingPeriods.map { .int($0) } ?? .null, "expires_at": time(c.expiresAt),
            "price": c.price.flatMap { p in c.currency.map { price(Price(milliunits: p, currency: $0, source: .store)) } }
                ?? .null,
            "will_renew": c.willRenew.map(JSONValue.bool) ?? .null,
        ])
    }

    /// A refunded entry's `refund_type` (Apple's `revocationType`, lowercased; null when the store
    /// did not say) and `refund_percentage` (decimal text of three places, or null).
    private static func add(_ refund: Refund, to fields: inout [Identifier: JSONValue]) {
        fields["refund_type"] = refund.kind.map { .string($0.rawValue) } ?? .null
        fields["refund_percentage"] = refund.percentage.map { .string(Refund.percentText($0)) } ?? .null
    }

    /// A promotional grant: no product, no purchase; `promotion_id` names it.
    private static func common(_ p: Promotion, at now: Int64) -> [Identifier: JSONValue] {
        [
            "active": .bool(p.isActive(at: now)), "state": .string(p.state(at: now)), "product_id": .null,
            "expires_at": time(p.endsAt), "grace_period_expires_at": .null, "will_renew": .bool(false),
            "period_type": .string("promotional"), "ownership": .string("promotional"),
            "original_transaction_id": .null, "environment": .null, "store": .string("promotional"),
            "promotion_id": .string(String(p.id)),
        ]
    }

    /// A grandfathered grant: for life, from the AppTransaction `app_transaction_id` names.
    private static func common(_ app: AppTransaction) -> [Identifier: JSONValue] {
        [
            "active": .bool(true), "state": .string("active"), "product_id": .null, "expires_at": .null,
            "grace_period_expires_at": .null, "will_renew": .bool(false), "period_type": .string("grandfathered"),
            "ownership": .string("purchased"), "original_transaction_id": .null, "environment": .string(app.environment),
            "store": .string("app_store"), "app_transaction_id": .string(app.appTransactionID),
        ]
    }

    private static func common(_ p: NonSubscriptionPurchase) -> [Identifier: JSONValue] {
        [
            "active": .bool(p.isEntitled), "state": .string(state(p)), "product_id": .string(p.productID),
            "store": .string(p.store.rawValue),
            "expires_at": time(p.expiresAt), "grace_period_expires_at": .null, "will_renew": .bool(false),
            "period_type": .string("normal"), "ownership": .string(p.ownership),
            "original_transaction_id": .string(p.transactionID), "environment": .string(p.environment),
        ]
    }

    /// `{"rule", "decision", "facts": {…}}`.
    package static func json(_ e: Explanation) -> JSONValue {
        .object(["rule": .string(e.rule), "decision": .string(e.decision), "facts": FactRecords.json(e.facts)])
    }

    /// `{"amount": "9.990", "currency": "EUR", "source": "store"}` (amount exact, as text), or null.
    package static func price(_ p: Price?) -> JSONValue {
        guard let p else { return .null }
        return .object([
            "amount": .string(Money.text(p.milliunits)), "currency": .string(p.currency), "source": .string(p.source.rawValue),
        ])
    }

    /// RFC 3339 UTC with milliseconds, or null.
    package static func time(_ ms: Int64?) -> JSONValue { ms.map { .string(CivilTime.rfc3339($0)) } ?? .null }

    /// FNV-1a 64 of the bytes of `parts` one after the other, in hex.
    package static func fnv1a64(_ parts: [[UInt8]]) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for part in parts {
            for b in part { hash = (hash ^ UInt64(b)) &* 0x0000_0100_0000_01b3 }
        }
        let hex = String(hash, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }
}
