import Identifiers

/// A lifecycle event of a subscriber's purchases, derived from stored facts. `key` identifies it:
/// deriving again from the same facts gives the same keys, so each event is stored once.
package struct LifecycleEvent: Sendable, Equatable {
    package enum Kind: String, Sendable, CaseIterable {
        case initialPurchase = "initial_purchase"
        case trialStarted = "trial_started"
        case trialConverted = "trial_converted"
        case renewal
        case productChange = "product_change"
        case cancellation
        case uncancellation
        case billingIssue = "billing_issue"
        case gracePeriodStarted = "grace_period_started"
        /// Google Play: the customer paused the subscription.
        case paused = "subscription_paused"
        case expiration
        case refund
        /// The store reversed a refund (Apple's `REFUND_REVERSED`): what it took is back.
        case refundReversed = "refund_reversed"
        /// A monthly plan's 12-month commitment ended and another began (``Commitments``).
        case commitmentRenewal = "commitment_renewal"
        case transfer
        /// Another id joined the user (an alias): the facts name `alias_app_user_id`; no product.
        case merge
        /// Support gave an entitlement (``Promotion``); no product, the facts name it.
        case promotionalGrant = "promotional_grant"
        /// Support took a promotional entitlement back before its end.
        case promotionalRevocation = "promotional_revocation"
        /// A promotional entitlement reached its end.
        case promotionalExpiration = "promotional_expiration"
        /// The app posted StoreKit's AppTransaction: which version the person first got (what
        /// grandfathering reads); no product, dated when they first got the app.
        case appTransaction = "app_transaction"
    }

    package var key: String
    package var kind: Kind
    /// When it happened, as well as the facts tell: a purchase date, an expiry, a refund date, or
    /// when receiptd first saw the renewal info that showed it.
    package var at: Int64
    package var productID: String
    package var originalTransactionID: String
    package var transactionID: String?
    package var facts: [Fact]

    package init(
        key: String, kind: Kind, at: Int64, productID: String, originalTransactionID: String, transactionID: String?,
        facts: [Fact]
    ) {
        self.key = key
        self.kind = kind
        self.at = at
        self.productID = productID
        self.originalTransactionID = originalTransactionID
        self.transactionID = transactionID
        self.facts = facts
    }

    /// A transfer's key: the purchase, when, and to whom. ``Erasure`` renames an erased receiver
    /// here as derivation would name them afterwards, so one function says how the key is made.
    package static func transferKey(originalTransactionID: String, at: Int64, to: String) -> String {
        "transfer:\(originalTransactionID):\(at):\(to)"
    }
}

/// Derives the lifecycle events of a subscriber from facts alone, by replaying time: each
/// subscription's state is derived at every moment a fact names (a purchase, an expiry, a refund,
/// a grace period's end, a renewal snapshot), from what had happened by then, and each change
/// between consecutive moments is an event. Pure and deterministic, so `receiptd rederive` gets
/// the same events the live service stored.
package enum History {
    package static func events(
        _ facts: Facts, appUserID: String, catalog: Catalog = Catalog(), policy: DerivationPolicy = DerivationPolicy(),
        asOf: Int64
    ) -> [LifecycleEvent] {
        var events: [LifecycleEvent] = []
        let observations = Derivation.observationsByChain(facts.renewals)
        for (original, chain) in Derivation.chains(facts.purchases, catalog: catalog) {
            events += replay(
                chain, original: original, observations: observations[Identifier(original)] ?? [], policy: policy, asOf: asOf)
            events += Commitments.renewalEvents(chain).filter { $0.at <= asOf }
        }
        for p in facts.purchases.sorted(by: Purchase.chronological) {
            let kind = catalog.kind(of: p)
            if kind != .autoRenewable {
                events.append(
                    LifecycleEvent(
                        key: "initial_purchase:\(p.transactionID)", kind: .initialPurchase, at: p.purchaseDate ?? 0,
                        productID: p.productID, originalTransactionID: p.originalTransactionID, transactionID: p.transactionID,
                        facts: [Fact("product_type", .text(kind.name))] + [Fact.number("quantity", p.quantity)].compactMap { $0 })
                )
            }
            // A refund of any period, current or past; an upgrade's cancellation is not a refund.
            if let reversal = p.refundReversal {
                // The refund that was (keyed as when it was current, unless a newer one is), then its reversal.
                let key =
                    p.cancellationDate == nil ? "refund:\(p.transactionID)" : "refund:\(p.transactionID):\(reversal.refundedAt)"
                let about = [Fact("product_type", .text(kind.name)), Fact("refunded_at", .time(reversal.refundedAt))]
                events.append(
                    LifecycleEvent(
                        key: key, kind: .refund, at: reversal.refundedAt, productID: p.productID,
                        originalTransactionID: p.originalTransactionID, transactionID: p.transactionID,
                        facts: [Fact("revocation", .text("refund")), Fact("reversed_at", .time(reversal.reversedAt))] + about))
                events.append(
                    LifecycleEvent(
                        key: "refund_reversed:\(p.transactionID):\(reversal.refundedAt)", kind: .refundReversed,
                        at: reversal.reversedAt, productID: p.productID, originalTransactionID: p.originalTransactionID,
                        transactionID: p.transactionID, facts: about))
            }
            if let refund = Refund(p) {
                events.append(
                    LifecycleEvent(
                        key: "refund:\(p.transactionID)", kind: .refund, at: refund.at, productID: p.productID,
                        originalTransactionID: p.originalTransactionID, transactionID: p.transactionID,
                        facts: [
                            Fact("revocation", .text(refund.isFamilyRevocation ? "family_revoke" : "refund")),
                            Fact("product_type", .text(kind.name)),
                        ]
                            + [
                                Fact.text("cancellation_reason", p.cancellationReason),
                                Fact.time("period_expires_at", p.expiresDate),
                            ].compactMap { $0 } + refund.facts
                            + [Fact.number("refunded_quantity", refund.refundedUnits(of: p.quantity))].compactMap { $0 }))
            }
        }
        // A move between two of the user's own ids (a merge) is not a transfer: the merge event tells it.
        for t in facts.transfers {
            guard let from = t.from else { continue }
            let (toSelf, fromSelf) = (facts.isSelf(t.to, canonical: appUserID), facts.isSelf(from, canonical: appUserID))
            guard toSelf != fromSelf else { continue }
            let product =
                t.productID ?? facts.purchases.first { $0.originalTransactionID.isExactly(t.originalTransactionID) }?.productID
                ?? ""
            events.append(
                LifecycleEvent(
                    key: LifecycleEvent.transferKey(originalTransactionID: t.originalTransactionID, at: t.at, to: t.to),
                    kind: .transfer, at: t.at, productID: product,
                    originalTransactionID: t.originalTransactionID, transactionID: nil,
                    facts: [
                        Fact("from_app_user_id", .text(t.from ?? "")), Fact("to_app_user_id", .text(t.to)),
                        Fact("direction", .text(toSelf ? "in" : "out")),
                    ]))
        }
        for alias in facts.aliases {
            events.append(
                LifecycleEvent(
                    key: "merge:\(alias.appUserID)", kind: .merge, at: alias.at, productID: "", originalTransactionID: "",
                    transactionID: nil, facts: [Fact("alias_app_user_id", .text(alias.appUserID))]))
        }
        for p in facts.promotions { events += promotionEvents(p, asOf: asOf) }
        for app in facts.appTransactions {
            events.append(
                LifecycleEvent(
                    key: "app_transaction:\(app.appTransactionID)", kind: .appTransaction, at: app.originalPurchaseDate ?? 0,
                    productID: "", originalTransactionID: "", transactionID: nil,
                    facts: [
                        Fact("app_transaction_id", .text(app.appTransactionID)), Fact("environment", .text(app.environment)),
                        Fact.text("original_application_version", app.originalApplicationVersion),
                        Fact.text("original_platform", app.originalPlatform),
                    ].compactMap { $0 }))
        }
        // Events of another store's purchases say which (the App Store's, the default, say nothing).
        var named: [Identifier: Store] = [:]
        for p in facts.purchases where p.store.rules.namedInEvents { named[Identifier(p.originalTransactionID)] = p.store }
        if !named.isEmpty {
            for i in events.indices {
                if let store = named[Identifier(events[i].originalTransactionID)] {
                    events[i].facts.append(Fact("store", .text(store.rawValue)))
                }
            }
        }
        // A state can come back (snapshots disagreeing over time); its event happened the first time.
        var seen: Set<Identifier> = []
        return events.filter { seen.insert(Identifier($0.key)).inserted }.sorted { ($0.at, $0.key) < ($1.at, $1.key) }
    }

    /// A promotion's grant, and its revocation or its end, as far as `asOf`.
    static func promotionEvents(_ p: Promotion, asOf: Int64) -> [LifecycleEvent] {
        let facts = [
            Fact("entitlement", .text(p.entitlement)), Fact("promotion_id", .number(p.id)),
            Fact("expires_at", .time(p.expiresAt)), Fact("granted_by", .text(p.grantedBy)), Fact("reason", .text(p.reason)),
        ]
        func event(_ kind: LifecycleEvent.Kind, at: Int64, _ more: [Fact] = []) -> LifecycleEvent {
            LifecycleEvent(
                key: "\(kind.rawValue):\(p.id)", kind: kind, at: at, productID: "", originalTransactionID: "",
                transactionID: nil, facts: facts + more)
        }
        guard p.startsAt <= asOf else { return [] }
        var events = [event(.promotionalGrant, at: p.startsAt)]
        if let revoked = p.revokedAt, revoked < p.expiresAt {
            if revoked <= asOf {
                events.append(
                    event(
                        .promotionalRevocation, at: revoked,
                        [Fact("revoked_by", .text(p.revokedBy ?? ""))]
                            + [Fact.text("revoke_reason", p.revokeReason)].compactMap { $0 }))
            }
        } else if p.expiresAt <= asOf {
            events.append(event(.promotionalExpiration, at: p.expiresAt))
        }
        return events
    }

    /// The events of one subscription.
    static func replay(
        _ chain: [Purchase], original: String, observations: [RenewalObservation], policy: DerivationPolicy, asOf: Int64
    ) -> [LifecycleEvent] {
        let ordered = chain.sorted(by: Purchase.chronological)
        var moments: Set<Int64> = []
        for p in ordered {
            for date in [p.purchaseDate, p.expiresDate, p.cancellationDate] { if let date { moments.insert(date) } }
        }
        for o in observations {
            moments.insert(o.observedAt)
            if let grace = o.renewal.gracePeriodExpiresDate { moments.insert(grace) }
            if let resumes = o.renewal.autoResumeDate { moments.insert(resumes) }
        }
        var events: [LifecycleEvent] = []
        var previous: SubscriptionStatus?
        var previousObservation: RenewalObservation?
        let steps = moments.filter { $0 <= asOf }.sorted().map { ($0, false) } + [(asOf, true)]
        var views = Views(ordered)
        for (t, final) in steps {
            let known = final ? ordered : views.at(t)
            guard let current = known.last(where: { !$0.isUpgraded }) ?? known.last else { continue }
            let peekUntil = ordered.first { Purchase.chronological(current, $0) && !$0.isUpgraded }?.purchaseDate ?? .max
            let observation =
                final ? observations.last : Derivation.renewal(observations, period: current, at: t, peekUntil: peekUntil)
            // `known` keeps `ordered`'s order (a view drops no purchase out of turn and moves none).
            let status = Derivation.chainStatuses(
                ordered: known, observations: observations, policy: policy, at: t, final: final, peekUntil: peekUntil)[0]
            // A payment still pending (Google Play) is no purchase yet: its events wait for the payment.
            if status.state == .pending && (previous == nil || previous?.state == .pending) { continue }
            events += changes(from: previous, to: status, current: current, known: known, at: t)
            events += renewalChanges(from: previousObservation, to: observation, status: status, previous: previous)
            previous = status
            previousObservation = observation
        }
        return events
    }

    /// The chain as it stood at `t`: purchases made by then; refunds and upgrades only from when they happened.
    static func view(_ ordered: [Purchase], at t: Int64) -> [Purchase] {
        var result: [Purchase] = []
        for i in ordered.indices where (ordered[i].purchaseDate ?? .min) <= t { result.append(seen(ordered, i, at: t).purchase) }
        return result
    }

    /// `ordered[i]` as it stood at `t` (made by then), and whether that differs from what it is now.
    private static func seen(_ ordered: [Purchase], _ i: Int, at t: Int64) -> (purchase: Purchase, differs: Bool) {
        let p = ordered[i]
        var q = p
        var differs = false
        if let c = q.cancellationDate, c > t {
            q.cancellationDate = nil
            q.cancellationReason = nil
            differs = true
        }
        if q.isUpgraded, (p.cancellationDate ?? ordered[(i + 1)...].first?.purchaseDate ?? .min) > t {
            q.isUpgraded = false
            differs = true
        }
        return (q, differs)
    }

    /// ``view(_:at:)`` at times that only grow, kept up to date instead of built anew: a long chain
    /// replayed at each of its instants was quadratic in copies of purchases. Once a purchase is
    /// seen as it is now (its refund or upgrade has happened) it stays so, so only the purchases
    /// new since the last time and those still seen differently are looked at again.
    struct Views {
        let ordered: [Purchase]
        /// Whether purchases come in order of their purchase date (nil first): then the purchases
        /// made by `t` are a prefix. Else every view is built anew.
        let prefixes: Bool
        var known: [Purchase] = []
        var differing: [Int] = []

        init(_ ordered: [Purchase]) {
            self.ordered = ordered
            prefixes = zip(ordered, ordered.dropFirst()).allSatisfy { ($0.purchaseDate ?? .min) <= ($1.purchaseDate ?? .min) }
        }

        /// The view at `t`, no earlier than the previous call's.
        mutating func at(_ t: Int64) -> [Purchase] {
            guard prefixes else { return History.view(ordered, at: t) }
            differing = differing.filter { i in
                let (q, differs) = History.seen(ordered, i, at: t)
                if !differs { known[i] = q }
                return differs
            }
            while known.count < ordered.count, (ordered[known.count].purchaseDate ?? .min) <= t {
                let (q, differs) = History.seen(ordered, known.count, at: t)
                if differs { differing.append(known.count) }
                known.append(q)
            }
            return known
        }
    }

    private static let ongoing: Set<SubscriptionState> = [.active, .gracePeriod, .billingRetry, .accountHold]
    private static let billing: Set<SubscriptionState> = [.gracePeriod, .billingRetry, .accountHold]

    /// Events from one state of a subscription to the next.
    static func changes(
        from previous: SubscriptionStatus?, to status: SubscriptionStatus, current: Purchase, known: [Purchase], at t: Int64
    ) -> [LifecycleEvent] {
        let original = status.originalTransactionID
        func event(_ kind: LifecycleEvent.Kind, _ key: String, at: Int64, _ facts: [Fact?]) -> LifecycleEvent {
            LifecycleEvent(
                key: "\(kind.rawValue):\(key)", kind: kind, at: at, productID: status.productID, originalTransactionID: original,
                transactionID: status.storeTransactionID, facts: facts.compactMap { $0 })
        }
        var events: [LifecycleEvent] = []
        let bought = current.purchaseDate ?? t
        if let previous {
            if previous.storeTransactionID != status.storeTransactionID {
                let kind: LifecycleEvent.Kind
                var facts: [Fact?] = [.time("expires_date", status.expiresAt)]
                if previous.productID != status.productID {
                    kind = .productChange
                    let upgraded = known.first { $0.transactionID == previous.storeTransactionID }?.isUpgraded == true
                    facts += [
                        .text("from_product_id", previous.productID), .text("to_product_id", status.productID),
                        .text("change", upgraded ? "upgrade" : "downgrade_or_crossgrade"),
                    ]
                } else if previous.periodType == "trial" && status.periodType != "trial" {
                    kind = .trialConverted
                } else {
                    kind = .renewal
                    if !ongoing.contains(previous.state) { facts.append(.flag("after_lapse", true)) }
                    if billing.contains(previous.state) {
                        facts.append(.flag("billing_recovered", true))
                    }
                }
                if let offer = status.offer { facts += [.text("offer_type", offer.type), .text("offer_id", offer.id)] }
                events.append(event(kind, status.storeTransactionID, at: bought, facts))
            }
        } else {
            var facts: [Fact?] = [.time("expires_date", status.expiresAt), .text("ownership", status.ownership)]
            if let offer = status.offer { facts += [.text("offer_type", offer.type), .text("offer_id", offer.id)] }
            events.append(event(status.periodType == "trial" ? .trialStarted : .initialPurchase, original, at: bought, facts))
        }
        let wasBilling = previous.map { billing.contains($0.state) } ?? false
        let expires = status.expiresAt ?? 0
        if status.state == .gracePeriod && previous?.state != .gracePeriod {
            events.append(
                event(
                    .gracePeriodStarted, "\(original):\(expires)", at: t,
                    [.time("grace_period_expires_date", status.gracePeriodExpiresAt)]))
        }
        if billing.contains(status.state) && !wasBilling {
            events.append(event(.billingIssue, "\(original):\(expires)", at: t, [.time("expires_date", status.expiresAt)]))
        }
        if status.state == .paused && previous?.state != .paused {
            events.append(
                event(
                    .paused, "\(original):\(expires)", at: t,
                    [.time("expires_date", status.expiresAt), .time("resumes_at", status.resumesAt)]))
        }
        if status.state == .expired, let previous, ongoing.contains(previous.state) {
            events.append(
                event(
                    .expiration, "\(original):\(expires)", at: t,
                    [.time("expires_date", status.expiresAt), .text("reason", status.expirationReason?.rawValue)]))
        }
        return events
    }

    /// Auto-renew turned off, or back on, while the subscription was running (a resubscription
    /// after a lapse is a renewal, not an uncancellation).
    static func renewalChanges(
        from previous: RenewalObservation?, to observation: RenewalObservation?, status: SubscriptionStatus,
        previous previousStatus: SubscriptionStatus?
    ) -> [LifecycleEvent] {
        guard let observation, observation != previous, ongoing.contains(status.state) else { return [] }
        let now = observation.renewal.autoRenewStatus
        // A snapshot from before the current period began says nothing about it.
        let before = previous.flatMap { $0.observedAt >= (status.purchasedAt ?? .min) ? $0.renewal.autoRenewStatus : nil }
        let kind: LifecycleEvent.Kind
        if now == false && before != false {
            kind = .cancellation
        } else if now == true && before == false, let previousStatus, ongoing.contains(previousStatus.state) {
            kind = .uncancellation
        } else {
            return []
        }
        return [
            LifecycleEvent(
                key: "\(kind.rawValue):\(status.originalTransactionID):\(observation.observedAt)", kind: kind,
                at: observation.observedAt, productID: status.productID, originalTransactionID: status.originalTransactionID,
                transactionID: status.storeTransactionID,
                facts: [Fact("expires_date", .time(status.expiresAt ?? 0))]
                    + [Fact.text("auto_renew_product_id", observation.renewal.autoRenewProductID)].compactMap { $0 })
        ]
    }
}
