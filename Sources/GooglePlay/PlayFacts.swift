package import Entitlements

/// What a Play answer states, as the facts receiptd keeps for both stores (Docs/google-play.md
/// "From Google's answer to facts"):
///
/// - A subscription is the chain of tokens linked by `linkedPurchaseToken` (``PlayRecord/chain``):
///   its original transaction id. Each of its periods is a transaction named by the order that
///   paid for it (`latestSuccessfulOrderId`, `GPA.…`, renewals `GPA.…..N`); a period no order paid
///   for yet (a pending payment) is named by the token's reference.
/// - A period begins at `startTime` for the token's first order, else where the period before it
///   ended (``PlayRecord/periodStart``), else when receiptd first saw it; it ends at the line
///   item's `expiryTime`.
/// - Google's `subscriptionState`, auto-renewal, a pause, a grace period's end and an account
///   hold are the subscription's renewal facts, from which the derivation decides.
/// - An add-on (a second line item) is a subscription of its own, `<chain>/<product>`.
/// - A one-time product's purchase is one transaction per line item, named by its order; a
///   pending one states nothing yet, and a cancelled one is refunded from when receiptd first saw it so.
/// - An order Google voided (``PlayRecord/voidedAt``) is refunded from then.
/// - `testPurchase` is the `sandbox` environment; `obfuscatedExternalAccountId` is the purchase's
///   account token, which the ownership policy matches to an app user as it does Apple's.
extension PlayRecord {
    package var facts: (purchases: [Purchase], renewals: [Renewal]) {
        var (purchases, renewals): ([Purchase], [Renewal]) =
            switch resource {
            case .subscription(let s): subscriptionFacts(s)
            case .product(let p): (productFacts(p), [])
            }
        if let voidedAt {
            // Google took the money back: the order is refunded from then, whatever it states since.
            for i in purchases.indices {
                purchases[i].cancellationDate = purchases[i].cancellationDate.map { min($0, voidedAt) } ?? voidedAt
                purchases[i].cancellationReason = "0"
                purchases[i].commerce.revocationType = "REFUND_FULL"
            }
        }
        return (purchases, renewals)
    }

    private func subscriptionFacts(_ s: SubscriptionPurchase) -> ([Purchase], [Renewal]) {
        var purchases: [Purchase] = []
        var renewals: [Renewal] = []
        let environment: StoreEnvironment = s.isTest ? .sandbox : .production
        for (index, item) in s.lineItems.enumerated() {
            let original = index == 0 ? chain : chain + "/" + item.productID
            let order = item.latestSuccessfulOrderID
            let id = (order ?? tokenReference) + (index == 0 ? "" : "/" + item.productID)
            let isFirstOrder = order.map { !$0.contains("..") } ?? true
            let start: Int64? =
                isFirstOrder ? (s.startTime ?? seenAt) : (periodStart ?? min(seenAt, item.expiryTime ?? seenAt))
            purchases.append(
                Purchase(
                    transactionID: id, originalTransactionID: original, productID: item.productID, purchaseDate: start,
                    // A pending payment's period has not begun: it ends where it starts. Never without
                    // an end, which would make it a lasting (non-consumable) purchase.
                    originalPurchaseDate: s.startTime, expiresDate: s.state == .pending ? start : (item.expiryTime ?? start),
                    isTrialPeriod: item.offerPhase == .freeTrial, isInIntroOfferPeriod: item.offerPhase == .introductoryPrice,
                    ownershipType: "PURCHASED", environment: environment, promotionalOfferID: item.offerID,
                    appAccountToken: s.obfuscatedAccountID, store: .playStore, commerce: commerce(s, item)))
            renewals.append(
                Renewal(
                    originalTransactionID: original, productID: item.productID,
                    autoRenewProductID: item.deferredReplacementProductID ?? item.productID,
                    autoRenewStatus: item.autoRenewEnabled ?? false, expirationIntent: intent(s.cancellation),
                    gracePeriodExpiresDate: s.state == .inGracePeriod ? item.expiryTime : nil,
                    isInBillingRetryPeriod: s.state == .onHold, priceConsentStatus: consent(item.priceChange),
                    priceIncreaseStatus: item.priceChange?.mode == "OPT_OUT_PRICE_INCREASE" ? "1" : nil,
                    promotionalOfferID: item.offerID, environment: environment, storeState: s.state.rawValue,
                    autoResumeDate: s.state == .paused ? s.autoResumeTime : nil))
        }
        if s.lineItems.isEmpty {
            // A pending purchase may name no item yet: nothing to hold until Google names one.
            return ([], [])
        }
        return (purchases, renewals)
    }

    private func productFacts(_ p: ProductPurchase) -> [Purchase] {
        // Nothing is bought while the payment is pending: a non-consumable would otherwise grant.
        guard p.state != .pending else { return [] }
        let environment: StoreEnvironment = p.isTest ? .sandbox : .production
        return p.lineItems.enumerated().map { index, item in
            let id = (p.orderID ?? tokenReference) + (index == 0 ? "" : "/" + item.productID)
            // A cancelled purchase was never paid (its payment failed or was declined) or was
            // voided: either way it grants nothing from when receiptd learnt it.
            let cancelled = p.state == .cancelled ? (cancelledAt ?? seenAt) : nil
            return Purchase(
                transactionID: id, originalTransactionID: id, productID: item.productID,
                purchaseDate: p.completionTime ?? seenAt, originalPurchaseDate: p.completionTime,
                cancellationDate: cancelled, cancellationReason: cancelled == nil ? nil : "0", ownershipType: "PURCHASED",
                environment: environment, promotionalOfferID: item.offerID, quantity: item.quantity,
                appAccountToken: p.obfuscatedAccountID, store: .playStore,
                commerce: Commerce(storefront: p.regionCode, transactionReason: "PURCHASE"))
        }
    }

    /// The period's money: what a base-price period charges is the plan's recurring price; a free
    /// trial charges nothing; an introductory or prorated period's price Google does not state here.
    private func commerce(_ s: SubscriptionPurchase, _ item: SubscriptionPurchase.LineItem) -> Commerce {
        var price: Price?
        if let recurring = item.recurringPrice {
            switch item.offerPhase {
            case .freeTrial: price = Price(milliunits: 0, currency: recurring.currency, source: .store)
            case .basePrice, nil: price = Price(milliunits: recurring.milliunits, currency: recurring.currency, source: .store)
            case .introductoryPrice, .prorationPeriod: price = nil
            }
        }
        let isFirst = item.latestSuccessfulOrderID.map { !$0.contains("..") } ?? true
        return Commerce(
            price: price, storefront: s.regionCode,
            offerType: item.offerPhase == .freeTrial || item.offerPhase == .introductoryPrice ? 1 : item.offerID != nil ? 2 : nil,
            offerDiscountType: item.offerPhase == .freeTrial
                ? "FREE_TRIAL" : item.offerPhase == .introductoryPrice ? "PAY_AS_YOU_GO" : nil,
            transactionReason: isFirst ? "PURCHASE" : "RENEWAL",
            billingPlanType: item.installments == nil ? nil : "INSTALLMENTS", commitment: commitment(item))
    }

    /// An installment plan: the committed payments, and which of them paid for this period
    /// (the count less those remaining after it).
    private func commitment(_ item: SubscriptionPurchase.LineItem) -> Commitment? {
        guard let plan = item.installments, let total = plan.initialCommittedPayments else { return nil }
        let number = plan.remainingCommittedPayments.map { max(1, min(total, total - $0)) }
        return Commitment(
            billingPeriodNumber: number, totalBillingPeriods: total,
            price: item.recurringPrice.map { $0.milliunits.multipliedReportingOverflow(by: total) }.flatMap {
                $0.overflow ? nil : $0.partialValue
            })
    }

    /// Google's reason for the end, in Apple's `expiration_intent` numbers the derivation reads:
    /// the customer 1, a billing failure (Google ends a subscription whose hold ran out) 2, the
    /// developer or a replacement 5.
    private func intent(_ c: SubscriptionPurchase.Cancellation?) -> Int64? {
        switch c {
        case .user: 1
        case .system: 2
        case .developer, .replacement: 5
        case nil: nil
        }
    }

    /// A price increase the customer must accept: `0` while outstanding, `1` once confirmed.
    private func consent(_ change: SubscriptionPurchase.PriceChange?) -> String? {
        guard let change, change.mode == "PRICE_INCREASE" else { return nil }
        return change.state == "CONFIRMED" || change.state == "APPLIED" ? "1" : "0"
    }
}
