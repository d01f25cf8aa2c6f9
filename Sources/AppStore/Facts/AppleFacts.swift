package import Entitlements
import Identifiers
package import JSON

/// Apple's wire models → the domain's facts, each with its provenance: the one mapping, beside
/// the models (as Google Play's ``PlayFacts`` is beside Play's). Every source of facts (a
/// verifyReceipt answer, a V1 notification's `unified_receipt`, a StoreKit 2 transaction or
/// renewal info, the Server API's history and statuses) comes through here, and `receiptd
/// rederive` maps stored raw JSON again through the same functions.
package enum AppleFacts {
    /// A verifyReceipt answer, or a V1 notification's `unified_receipt` (which has no `receipt`:
    /// its bundle id is the notification's `bid`).
    package static func facts(
        of response: VerifyReceiptResponse, environment: StoreEnvironment, bundleID: String? = nil
    ) -> VerifiedFacts {
        let bundleID = bundleID ?? response.receipt?.bundleID ?? ""
        return VerifiedFacts(
            environment: environment,
            purchases: response.transactions.map { purchase($0, bundleID: bundleID, environment: environment) },
            renewals: response.pendingRenewalInfo.map { renewal($0, environment: environment) },
            latestReceipt: response.latestReceipt)
    }

    /// Verified StoreKit 2 data (a V2 notification's, or a client's signed transaction), stated
    /// at `statedAt` (the JWS's `signedDate`).
    package static func facts(transaction: SignedTransaction?, renewal: SignedRenewalInfo?, statedAt: Int64?) -> VerifiedFacts {
        let environment = (transaction?.environment ?? renewal?.environment).flatMap(StoreEnvironment.init(appleName:))
        return VerifiedFacts(
            environment: environment ?? .production, purchases: transaction.map { [purchase($0)] } ?? [],
            renewals: renewal.map { [self.renewal($0)] } ?? [], statedAt: statedAt, renewalChangedAt: renewal?.signedDate)
    }

    /// App Store Server API answers (§4.3): the customer's transaction history and their
    /// subscriptions' statuses (each group's newest transaction and its renewal info), verified.
    package static func facts(of statuses: ServerAPIClient.Statuses, history: [SignedTransaction]) -> VerifiedFacts {
        var purchases = history.map(purchase)
        for t in statuses.subscriptions.compactMap(\.transaction)
        where !history.contains(where: { $0.transactionID.isExactly(t.transactionID) }) {
            purchases.append(purchase(t))
        }
        return VerifiedFacts(
            environment: statuses.environment, purchases: purchases,
            renewals: statuses.subscriptions.compactMap(\.renewal).map(renewal))
    }

    /// A verifyReceipt transaction (§1.6).
    package static func purchase(_ t: Transaction, bundleID: String, environment: StoreEnvironment) -> Stated<Purchase> {
        Stated(
            Purchase(
                transactionID: t.transactionID, originalTransactionID: t.originalTransactionID, productID: t.productID,
                purchaseDate: t.purchaseDateMs, originalPurchaseDate: t.originalPurchaseDateMs, expiresDate: t.expiresDateMs,
                cancellationDate: t.cancellationDateMs, cancellationReason: t.cancellationReason,
                isTrialPeriod: t.isTrialPeriod, isInIntroOfferPeriod: t.isInIntroOfferPeriod, isUpgraded: t.isUpgraded,
                ownershipType: t.ownershipType, environment: environment, subscriptionGroupID: t.subscriptionGroupID,
                promotionalOfferID: t.promotionalOfferID, offerCodeRefName: t.offerCodeRefName, quantity: t.quantity,
                webOrderLineItemID: t.webOrderLineItemID, appAccountToken: t.appAccountToken),
            bundleID: bundleID, rawJSON: String(decoding: t.raw.jsonBytes, as: UTF8.self))
    }

    /// §3.5 onto §1.6's facts: `revocationDate` is the cancellation date, `offerType` 1 the trial
    /// or intro flags, 2 and 4 (win-back) a promotional offer, 3 an offer code.
    package static func purchase(_ t: SignedTransaction) -> Stated<Purchase> {
        let environment = t.environment.flatMap(StoreEnvironment.init(appleName:)) ?? .production
        let trial = t.offerType == 1 && t.offerDiscountType == "FREE_TRIAL"
        return Stated(
            Purchase(
                transactionID: t.transactionID, originalTransactionID: t.originalTransactionID, productID: t.productID,
                purchaseDate: t.purchaseDate, originalPurchaseDate: t.originalPurchaseDate, expiresDate: t.expiresDate,
                cancellationDate: t.revocationDate, cancellationReason: t.revocationReason.map(String.init),
                isTrialPeriod: trial, isInIntroOfferPeriod: t.offerType == 1 && !trial, isUpgraded: t.isUpgraded,
                ownershipType: t.inAppOwnershipType, environment: environment,
                subscriptionGroupID: t.subscriptionGroupID,
                promotionalOfferID: t.offerType == 2 || t.offerType == 4 ? t.offerIdentifier : nil,
                offerCodeRefName: t.offerType == 3 ? t.offerIdentifier : nil, quantity: t.quantity,
                webOrderLineItemID: t.webOrderLineItemID, appAccountToken: t.appAccountToken,
                appTransactionID: t.appTransactionID, commerce: commerce(t)),
            bundleID: t.bundleID, rawJSON: unsigned(t.raw))
    }

    /// A commitment plan's renewal info; nil when Apple stated none of it.
    package static func commitment(_ r: SignedRenewalInfo) -> RenewalCommitment? {
        let c = RenewalCommitment(
            renewalBillingPlanType: r.renewalBillingPlanType, autoRenewStatus: r.commitmentAutoRenewStatus,
            autoRenewProductID: r.commitmentAutoRenewProductID, renewalDate: r.commitmentRenewalDate,
            renewalPrice: r.commitmentRenewalPrice, renewalPlanType: r.commitmentRenewalBillingPlanType)
        return c == RenewalCommitment() ? nil : c
    }

    /// §3.5's money and terms. A price is kept only with a currency code it can be converted
    /// from (three capital letters) and when not negative.
    package static func commerce(_ t: SignedTransaction) -> Commerce {
        var price: Price?
        if let milliunits = t.price, milliunits >= 0, let currency = t.currency, Price.isCurrencyCode(currency) {
            price = Price(milliunits: milliunits, currency: currency, source: .store)
        }
        let hasCommitment = [t.commitmentPeriodNumber, t.commitmentTotalPeriods, t.commitmentPrice, t.commitmentExpiresDate]
            .contains { $0 != nil }
        return Commerce(
            price: price, storefront: t.storefront, offerType: t.offerType, offerDiscountType: t.offerDiscountType,
            offerPeriod: t.offerPeriod, transactionReason: t.transactionReason, revocationType: t.revocationType,
            revocationPercentage: t.revocationPercentage, billingPlanType: t.billingPlanType,
            commitment: hasCommitment
                ? Commitment(
                    billingPeriodNumber: t.commitmentPeriodNumber, totalBillingPeriods: t.commitmentTotalPeriods,
                    price: t.commitmentPrice, expiresDate: t.commitmentExpiresDate) : nil)
    }

    /// verifyReceipt's pending renewal info (§1.7).
    package static func renewal(_ r: PendingRenewalInfo, environment: StoreEnvironment) -> Stated<Renewal> {
        Stated(
            Renewal(
                originalTransactionID: r.originalTransactionID, productID: r.productID,
                autoRenewProductID: r.autoRenewProductID, autoRenewStatus: r.autoRenewStatus,
                expirationIntent: r.expirationIntent, gracePeriodExpiresDate: r.gracePeriodExpiresDateMs,
                isInBillingRetryPeriod: r.isInBillingRetryPeriod, priceConsentStatus: r.priceConsentStatus,
                priceIncreaseStatus: r.priceIncreaseStatus, offerCodeRefName: r.offerCodeRefName,
                promotionalOfferID: r.promotionalOfferID, environment: environment),
            rawJSON: String(decoding: r.raw.jsonBytes, as: UTF8.self))
    }

    /// §3.6 onto §1.7's facts.
    package static func renewal(_ r: SignedRenewalInfo) -> Stated<Renewal> {
        Stated(
            Renewal(
                originalTransactionID: r.originalTransactionID, productID: r.productID,
                autoRenewProductID: r.autoRenewProductID, autoRenewStatus: r.autoRenewStatus,
                expirationIntent: r.expirationIntent, gracePeriodExpiresDate: r.gracePeriodExpiresDate,
                isInBillingRetryPeriod: r.isInBillingRetryPeriod, priceIncreaseStatus: r.priceIncreaseStatus.map(String.init),
                offerCodeRefName: r.offerType == 3 ? r.offerIdentifier : nil,
                promotionalOfferID: r.offerType == 2 || r.offerType == 4 ? r.offerIdentifier : nil,
                environment: r.environment.flatMap(StoreEnvironment.init(appleName:)) ?? .production,
                commitment: commitment(r)),
            rawJSON: unsigned(r.raw))
    }

    /// A signed payload without `signedDate`: the same facts signed twice are the same row (the
    /// signed original stays in `notifications.body`).
    package static func unsigned(_ payload: JSONValue) -> String {
        guard case .object(var fields) = payload else { return String(decoding: payload.jsonBytes, as: UTF8.self) }
        fields["signedDate"] = nil
        return String(decoding: JSONValue.object(fields).jsonBytes, as: UTF8.self)
    }

    /// A stored App Store transaction mapped again from its raw JSON (`receiptd rederive`); nil
    /// when the raw JSON no longer parses as a transaction.
    package static func remapped(_ stored: Stated<Purchase>) -> Stated<Purchase>? {
        guard let json = try? JSONValue.parse(Array(stored.rawJSON.utf8)) else { return nil }
        var again: Stated<Purchase>
        if let parsed = try? Transaction(json) {
            again = purchase(parsed, bundleID: stored.bundleID ?? "", environment: stored.fact.environment)
        } else if let parsed = try? SignedTransaction(json) {
            again = purchase(parsed)
        } else {
            return nil
        }
        // A token is only ever learned, never forgotten (storage keeps the one it has); terms
        // verifyReceipt does not state stay as learned, and a price from elsewhere (history, the
        // client) stays until the raw JSON states a better one.
        again.fact.appAccountToken = again.fact.appAccountToken ?? stored.fact.appAccountToken
        again.fact.appTransactionID = again.fact.appTransactionID ?? stored.fact.appTransactionID
        again.fact.refundReversal = stored.fact.refundReversal  // history storage kept, not in any payload
        if !again.fact.commerce.statesTerms {
            let price = again.fact.commerce.price
            again.fact.commerce = stored.fact.commerce
            again.fact.commerce.price = price
        }
        if let kept = stored.fact.commerce.price, again.fact.commerce.price.map({ kept.source.outranks($0.source) }) ?? true {
            again.fact.commerce.price = kept
        }
        return again
    }

    /// A stored App Store renewal snapshot mapped again from its raw JSON.
    package static func remapped(_ stored: Stated<RenewalObservation>) -> Stated<RenewalObservation>? {
        guard let json = try? JSONValue.parse(Array(stored.rawJSON.utf8)) else { return nil }
        let again: Stated<Renewal>
        if let parsed = try? PendingRenewalInfo(json) {
            again = renewal(parsed, environment: stored.fact.renewal.environment)
        } else if let parsed = try? SignedRenewalInfo(json) {
            again = renewal(parsed)
        } else {
            return nil
        }
        var observation = stored.fact
        observation.renewal = again.fact
        return Stated(observation, bundleID: stored.bundleID, rawJSON: again.rawJSON)
    }
}
