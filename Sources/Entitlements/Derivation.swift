import Identifiers

/// Derives subscription states from stored facts, by Apple's rules (Docs/apple-protocols.md §1.8). Pure:
/// the same facts, catalog, policy and `now` give the same answer whatever order the facts are in.
///
/// - A subscription is the chain of transactions sharing an original transaction id; its periods
///   are ordered by purchase date (never array order). Upgraded transactions (`is_upgraded`) never
///   grant; the newest other period is the current one.
/// - A refund or revocation of the current period ends access; a refund of a past period does not.
/// - An expired period is in grace while `grace_period_expires_date` is ahead, in billing retry while
///   Apple says so, else expired with the reason of `expiration_intent`.
package enum Derivation {
    /// One status per product of each subscription: the current product first, ordered by product
    /// then original transaction id.
    package static func subscriptions(
        _ facts: Facts, catalog: Catalog = Catalog(), policy: DerivationPolicy = DerivationPolicy(), now: Int64
    ) -> [SubscriptionStatus] {
        let observations = observationsByChain(facts.renewals)
        var statuses: [SubscriptionStatus] = []
        for (original, chain) in chains(facts.purchases, catalog: catalog) {
            statuses += chainStatuses(
                chain, observations: observations[Identifier(original)] ?? [], policy: policy, at: now, final: true)
        }
        return statuses.sorted { ($0.productID, $0.originalTransactionID) < ($1.productID, $1.originalTransactionID) }
    }

    /// Purchases that are not auto-renewable (consumables, non-consumables, non-renewing
    /// subscriptions), newest first.
    package static func nonSubscriptions(
        _ facts: Facts, catalog: Catalog = Catalog(), policy: DerivationPolicy = DerivationPolicy(), now: Int64
    ) -> [NonSubscriptionPurchase] {
        var result: [NonSubscriptionPurchase] = []
        var stackEnd: [Identifier: Int64] = [:]  // non-renewing: where each product's paid time ends so far
        for p in facts.purchases.filter({ catalog.kind(of: $0) != .autoRenewable }).sorted(by: Purchase.chronological) {
            let kind = catalog.kind(of: p)
            var expires: Int64?
            var facts: [Fact?] = [
                .text("transaction_id", p.transactionID), .text("product_type", kind.name),
                .time("purchase_date", p.purchaseDate),
            ]
            if case .nonRenewing(let duration) = kind {
                let bought = p.purchaseDate ?? 0
                let start = p.cancellationDate == nil ? max(bought, stackEnd[Identifier(p.productID)] ?? bought) : bought
                let end = duration.added(to: start)
                if p.cancellationDate == nil { stackEnd[Identifier(p.productID)] = end }
                expires = end
                facts += [.text("duration", duration.description), .time("period_start", start), .time("expires_date", end)]
            }
            let refund = Refund(p)
            let refundedUnits = refund?.refundedUnits(of: p.quantity)
            facts += [
                .time("cancellation_date", p.cancellationDate), .text("ownership", p.ownership), .time("compared_at", now),
            ]
            facts += (refund?.facts ?? []) + [.number("refunded_quantity", refundedUnits)] + reversalFacts(p)
            let (entitled, rule, decision): (Bool, String, String) =
                if kind == .consumable {
                    (false, "consumable", "Listed only: a consumable never grants an entitlement.")
                } else if let refund {
                    refund.isFamilyRevocation
                        ? (
                            false, "revoked_family_sharing",
                            "Not entitled: Family Sharing access was revoked at \(CivilTime.rfc3339(refund.at))."
                        )
                        : (
                            false, refund.kind == .prorated ? "refunded_prorated" : "refunded",
                            "Not entitled: \(p.store.displayName) \(refund.refundedWords) this purchase\(refundedUnits.map { " (\($0) of its \(p.quantity ?? 1) units)" } ?? "") at \(CivilTime.rfc3339(refund.at)); a refund ends access from its date, whatever its share."
                        )
                } else if p.isFamilyShared && !policy.familySharedCounts {
                    (
                        false, "family_shared_not_counted",
                        "Not entitled: family-shared purchases do not count (entitlements.familySharedCounts)."
                    )
                } else if let expires {
                    expires > now
                        ? (
                            true, "non_renewing_period",
                            "Entitled: the paid period ends at \(CivilTime.rfc3339(expires)), after now."
                        )
                        : (false, "non_renewing_expired", "Not entitled: the paid period ended at \(CivilTime.rfc3339(expires)).")
                } else {
                    (true, "lasting_purchase", "Entitled: a non-consumable purchase lasts unless refunded.")
                }
            result.append(
                NonSubscriptionPurchase(
                    productID: p.productID, transactionID: p.transactionID, kind: kind, purchasedAt: p.purchaseDate,
                    expiresAt: expires, refundedAt: p.cancellationDate, environment: p.environment.rawValue, store: p.store,
                    price: p.commerce.price, ownership: p.ownership,
                    quantity: p.quantity, isEntitled: entitled, refund: refund, refundedQuantity: refundedUnits,
                    appTransactionID: p.appTransactionID,
                    explanation: Explanation(rule: rule, decision: decision, facts: facts.compactMap { $0 })))
        }
        return result.reversed()
    }

    /// A reversed refund of `p`, while no newer one stands: when it had taken effect and when the
    /// store reversed it (what it took is back).
    static func reversalFacts(_ p: Purchase) -> [Fact?] {
        guard p.cancellationDate == nil, let reversal = p.refundReversal else { return [] }
        return [.time("reversed_refund_date", reversal.refundedAt), .time("refund_reversed_at", reversal.reversedAt)]
    }

    /// Auto-renewable purchases grouped by original transaction id, in a stable order.
    /// Ids are grouped by their exact bytes (``Identifier``), as the database stores them.
    static func chains(_ purchases: [Purchase], catalog: Catalog) -> [(String, [Purchase])] {
        Dictionary(grouping: purchases.filter { catalog.kind(of: $0) == .autoRenewable }) { Identifier($0.originalTransactionID) }
            .sorted { $0.key < $1.key }.map { ($0.key.string, $0.value) }
    }

    static func observationsByChain(_ renewals: [RenewalObservation]) -> [Identifier: [RenewalObservation]] {
        Dictionary(grouping: renewals) { Identifier($0.renewal.originalTransactionID) }
            .mapValues { $0.sorted(by: RenewalObservation.chronological) }
    }

    /// The statuses of one subscription at `t`: its current product first, then each product it
    /// moved away from. `final` uses the newest renewal snapshot; otherwise the snapshot that
    /// describes `t` (see ``renewal(_:period:at:peekUntil:)``).
    static func chainStatuses(
        _ chain: [Purchase], observations: [RenewalObservation], policy: DerivationPolicy, at t: Int64, final: Bool,
        peekUntil: Int64 = .max
    ) -> [SubscriptionStatus] {
        chainStatuses(
            ordered: chain.sorted(by: Purchase.chronological), observations: observations, policy: policy, at: t, final: final,
            peekUntil: peekUntil)
    }

    /// ``chainStatuses(_:observations:policy:at:final:peekUntil:)`` of a chain already in
    /// `Purchase.chronological` order (History's replay calls it once per instant: sorting a
    /// long chain again each time made a 1,000-period history quadratic in copies).
    static func chainStatuses(
        ordered: [Purchase], observations: [RenewalObservation], policy: DerivationPolicy, at t: Int64, final: Bool,
        peekUntil: Int64 = .max
    ) -> [SubscriptionStatus] {
        guard let newest = ordered.last else { return [] }
        let current = ordered.last { !$0.isUpgraded } ?? newest
        let observation = final ? observations.last : renewal(observations, period: current, at: t, peekUntil: peekUntil)
        var statuses = [
            status(of: current, chain: ordered, observations: observations, chosen: observation, policy: policy, at: t)
        ]
        var seen: Set<Identifier> = [Identifier(current.productID)]
        var last = current.productID  // a chain's periods mostly share a product: no hash for those
        for p in ordered.reversed() {
            guard !p.productID.isExactly(last) else { continue }
            last = p.productID
            guard seen.insert(Identifier(p.productID)).inserted else { continue }
            statuses.append(superseded(p, by: current, at: t))
        }
        return statuses
    }

    /// The renewal snapshot that describes `t` for a period: the newest seen by `t`; but once the
    /// period has expired, a snapshot from before its expiry cannot say what happened at it, so
    /// the first snapshot after the expiry (and before the next period began) is used instead.
    static func renewal(
        _ observations: [RenewalObservation], period: Purchase, at t: Int64, peekUntil: Int64
    ) -> RenewalObservation? {
        let known = observations.last { $0.observedAt <= t }
        if let expires = period.expiresDate, expires <= t, (known?.observedAt ?? .min) < expires {
            if let after = observations.first(where: {
                $0.observedAt >= expires && $0.observedAt > t && $0.observedAt < peekUntil
            }) {
                return after
            }
        }
        return known
    }

    static func status(
        of current: Purchase, chain: [Purchase], observations: [RenewalObservation], chosen: RenewalObservation?,
        policy: DerivationPolicy, at now: Int64
    ) -> SubscriptionStatus {
        let expires = current.expiresDate ?? 0
        let renewal = chosen?.renewal
        // Billing facts are about the current period only when seen after it began.
        let billingValid = (chosen?.observedAt ?? .min) >= (current.purchaseDate ?? 0)
        let grace = billingValid ? renewal?.gracePeriodExpiresDate : nil
        let retrying = billingValid && renewal?.isInBillingRetryPeriod == true
        let t = CivilTime.rfc3339
        let refund = Refund(current)  // nil unless refunded or revoked (an upgrade is neither)
        var facts: [Fact?] = [
            .text("transaction_id", current.transactionID), .text("product_id", current.productID),
            .time("purchase_date", current.purchaseDate), .time("expires_date", current.expiresDate),
            .number("periods", Int64(chain.count)), .time("compared_at", now),
        ]
        let state: SubscriptionState
        var entitled: Bool
        var rule: String
        var decision: String
        if current.isUpgraded {
            state = .upgraded
            (entitled, rule) = (false, "upgraded_transaction")
            decision =
                "Not entitled here: transaction \(current.transactionID) was upgraded (is_upgraded); the product it was upgraded to grants access."
        } else if let cancelled = current.cancellationDate {
            facts += [.time("cancellation_date", cancelled), .text("cancellation_reason", current.cancellationReason)]
            facts += refund?.facts ?? []
            if refund?.isFamilyRevocation ?? current.isFamilyShared {
                (state, entitled, rule) = (.revoked, false, "revoked_current_period")
                decision = "Not entitled: Family Sharing access to the current period was revoked at \(t(cancelled))."
            } else if let refund, refund.kind == .prorated {
                (state, entitled, rule) = (.refunded, false, "refunded_current_period_prorated")
                decision =
                    "Not entitled: \(current.store.displayName) \(refund.refundedWords) the current period (transaction \(current.transactionID)), prorated for the time left in it, at \(t(cancelled)); a refund ends access from its date, whatever its share."
            } else {
                (state, entitled, rule) = (.refunded, false, "refunded_current_period")
                decision =
                    "Not entitled: \(current.store.displayName) refunded the current period (transaction \(current.transactionID)) at \(t(cancelled))."
            }
        } else if current.store.rules.readsStatedState, let stated = billingValid ? renewal?.storeState : nil,
            let decided = playDecision(stated, expires: expires, resumes: renewal?.autoResumeDate, now: now)
        {
            facts.append(.text("subscription_state", stated))
            if let resumes = renewal?.autoResumeDate { facts.append(.time("auto_resume_time", resumes)) }
            (state, entitled, rule, decision) = decided
        } else if expires > now {
            (state, entitled, rule) = (.active, true, "active_period")
            decision =
                "Entitled: the current period (transaction \(current.transactionID)) expires at \(t(expires)), after \(t(now))."
        } else if let grace, grace > now {
            facts.append(.time("grace_period_expires_date", grace))
            (state, entitled, rule) = (.gracePeriod, true, "grace_period")
            decision =
                "Entitled: the period expired at \(t(expires)), but \(current.store.displayName)'s billing grace period lasts until \(t(grace))."
        } else if retrying {
            facts.append(.flag("is_in_billing_retry_period", true))
            state = .billingRetry
            entitled = policy.billingRetryEntitles
            rule = entitled ? "billing_retry_entitled_by_policy" : "billing_retry"
            decision =
                "\(entitled ? "Entitled by policy (entitlements.billingRetryEntitles)" : "Not entitled"): the period expired at \(t(expires)) and \(current.store.displayName) is still retrying the payment."
        } else {
            (state, entitled, rule) = (.expired, false, "expired")
            decision = "Not entitled: the newest period expired at \(t(expires)), before \(t(now))."
        }
        if entitled && current.isFamilyShared && !policy.familySharedCounts {
            entitled = false
            rule = "family_shared_not_counted"
            decision =
                "Not entitled: family-shared purchases do not count (entitlements.familySharedCounts); otherwise: " + decision
        }
        if let chosen {
            facts += [
                .time("renewal_info_seen_at", chosen.observedAt), .flag("auto_renew_status", renewal?.autoRenewStatus),
                .text("auto_renew_product_id", renewal?.autoRenewProductID),
                .number("expiration_intent", renewal?.expirationIntent),
            ]
        }
        if current.isFamilyShared { facts.append(.text("ownership", current.ownership)) }
        facts += reversalFacts(current)
        let commitment = Commitments.status(of: current, renewal: renewal)
        if let commitment {
            facts += commitment.facts
            if entitled { decision += " " + commitment.sentence(t) }
        }

        let ongoing = state == .active || state == .gracePeriod || state == .billingRetry || state == .accountHold
        let autoRenew = renewal?.autoRenewStatus
        let reason: ExpirationReason? =
            switch state {
            case .expired, .billingRetry, .accountHold: ExpirationReason(intent: renewal?.expirationIntent)
            case .refunded, .revoked: .refunded
            default: nil
            }
        return SubscriptionStatus(
            productID: current.productID, originalTransactionID: current.originalTransactionID, state: state,
            isEntitled: entitled, expiresAt: current.expiresDate, gracePeriodExpiresAt: state == .gracePeriod ? grace : nil,
            willRenew: ongoing && autoRenew == true,
            renewsInto: ongoing ? renewal?.autoRenewProductID.flatMap { $0 == current.productID ? nil : $0 } : nil,
            periodType: current.isTrialPeriod ? "trial" : current.isInIntroOfferPeriod ? "intro" : "normal",
            offer: offer(of: current), ownership: current.ownership, environment: current.environment.rawValue,
            store: current.store,
            storeTransactionID: current.transactionID, price: current.commerce.price, purchasedAt: current.purchaseDate,
            originalPurchasedAt: current.originalPurchaseDate ?? chain.compactMap(\.purchaseDate).min(),
            refundedAt: state == .refunded || state == .revoked ? current.cancellationDate : nil,
            expirationReason: reason, priceIncrease: ongoing ? priceIncrease(renewal) : nil,
            unsubscribeDetectedAt: ongoing && autoRenew == false
                ? firstOfRun(observations, endingAt: chosen) { $0.autoRenewStatus == false } : nil,
            billingIssueDetectedAt: state == .gracePeriod || state == .billingRetry || state == .accountHold
                ? firstOfRun(observations, endingAt: chosen) {
                    $0.isInBillingRetryPeriod == true || $0.gracePeriodExpiresDate != nil
                }
                .map { max($0, current.purchaseDate ?? $0) } : nil,
            resumesAt: state == .paused ? renewal?.autoResumeDate : nil,
            refund: state == .refunded || state == .revoked ? refund : nil, commitment: commitment,
            appTransactionID: current.appTransactionID ?? chain.lazy.compactMap(\.appTransactionID).first,
            explanation: Explanation(rule: rule, decision: decision, facts: facts.compactMap { $0 }))
    }

    /// What Google Play's own state decides, where it decides more than the period's times: a
    /// pending payment, a pause, an account hold, a grace period (Google moves `expiryTime` to its
    /// end). Nil where the times decide as for Apple (active, canceled but not expired, expired).
    static func playDecision(_ stated: String, expires: Int64, resumes: Int64?, now: Int64) -> (
        SubscriptionState, Bool, String, String
    )? {
        let t = CivilTime.rfc3339
        switch stated {
        case "SUBSCRIPTION_STATE_PENDING":
            return (.pending, false, "pending_payment", "Not entitled: Google Play says the first payment has not completed yet.")
        case "SUBSCRIPTION_STATE_PENDING_PURCHASE_CANCELED":
            return (
                .expired, false, "pending_purchase_canceled",
                "Not entitled: the purchase was canceled before its payment completed."
            )
        case "SUBSCRIPTION_STATE_PAUSED":
            let when = resumes.map { $0 > now ? " until \(t($0))" : "; it was to resume at \(t($0))" } ?? ""
            return (.paused, false, "paused", "Not entitled: the customer paused the subscription\(when).")
        case "SUBSCRIPTION_STATE_ON_HOLD":
            return (
                .accountHold, false, "account_hold",
                "Not entitled: the period ended at \(t(expires)) and Google Play holds the subscription (account hold) until the payment is fixed."
            )
        case "SUBSCRIPTION_STATE_IN_GRACE_PERIOD" where expires > now:
            return (
                .gracePeriod, true, "grace_period",
                "Entitled: a renewal payment failed, but Google Play's grace period lasts until \(t(expires)), after \(t(now))."
            )
        default:
            return nil
        }
    }

    /// A product the subscription moved away from: never entitling.
    static func superseded(_ p: Purchase, by current: Purchase, at now: Int64) -> SubscriptionStatus {
        let expired = !p.isUpgraded && (p.expiresDate ?? 0) <= now
        let decision =
            expired
            ? "Not entitled: its last period expired at \(CivilTime.rfc3339(p.expiresDate ?? 0)); the subscription continued as \(current.productID)."
            : "Not entitled here: superseded by \(current.productID) in the same subscription group; that product grants access."
        return SubscriptionStatus(
            productID: p.productID, originalTransactionID: p.originalTransactionID, state: expired ? .expired : .upgraded,
            isEntitled: false, expiresAt: p.expiresDate, gracePeriodExpiresAt: nil, willRenew: false, renewsInto: nil,
            periodType: p.isTrialPeriod ? "trial" : p.isInIntroOfferPeriod ? "intro" : "normal", offer: offer(of: p),
            ownership: p.ownership, environment: p.environment.rawValue, store: p.store, storeTransactionID: p.transactionID,
            price: p.commerce.price, purchasedAt: p.purchaseDate,
            originalPurchasedAt: p.originalPurchaseDate, refundedAt: nil, expirationReason: nil, priceIncrease: nil,
            unsubscribeDetectedAt: nil, billingIssueDetectedAt: nil, appTransactionID: p.appTransactionID,
            explanation: Explanation(
                rule: "superseded_by_product", decision: decision,
                facts: [
                    Fact("transaction_id", .text(p.transactionID)), Fact("is_upgraded", .flag(p.isUpgraded)),
                    Fact("current_product_id", .text(current.productID)),
                    Fact("current_transaction_id", .text(current.transactionID)), Fact("compared_at", .time(now)),
                ] + [Fact.time("expires_date", p.expiresDate)].compactMap { $0 }))
    }

    static func offer(of p: Purchase) -> Offer? {
        if p.store.rules.offers == .byPhase {
            // One offer id for any phase (Google's): a trial's, an introductory price's, a developer's.
            if p.isTrialPeriod { return Offer(type: "free_trial", id: p.promotionalOfferID) }
            if p.isInIntroOfferPeriod { return Offer(type: "introductory", id: p.promotionalOfferID) }
            return p.promotionalOfferID.map { Offer(type: "promotional", id: $0) }
        }
        if let code = p.offerCodeRefName { return Offer(type: "offer_code", id: code) }
        if let promo = p.promotionalOfferID { return Offer(type: "promotional", id: promo) }
        if p.isTrialPeriod { return Offer(type: "free_trial", id: nil) }
        if p.isInIntroOfferPeriod { return Offer(type: "introductory", id: nil) }
        return nil
    }

    /// `pending_consent` while Apple waits for the customer's answer, `agreed` once given (§1.7).
    static func priceIncrease(_ r: Renewal?) -> String? {
        guard let r, r.priceConsentStatus != nil || r.priceIncreaseStatus != nil else { return nil }
        return r.priceConsentStatus == "1" || r.priceIncreaseStatus == "1" ? "agreed" : "pending_consent"
    }

    /// When the run of snapshots matching `condition` that ends at `last` began.
    static func firstOfRun(
        _ observations: [RenewalObservation], endingAt last: RenewalObservation?, where condition: (Renewal) -> Bool
    ) -> Int64? {
        guard let last, condition(last.renewal), var i = observations.firstIndex(of: last) else { return nil }
        while i > 0 && condition(observations[i - 1].renewal) { i -= 1 }
        return observations[i].observedAt
    }
}
