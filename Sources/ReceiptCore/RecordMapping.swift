import AppStore
import Entitlements
import JSON
import SignedData
import Storage

/// Moves facts between the modules that must not know each other: Apple's wire models → storage
/// rows → the pure domain's inputs.
package enum RecordMapping {
    /// A verifyReceipt answer, or a V1 notification's `unified_receipt` (which has no `receipt`:
    /// its bundle id is the notification's `bid`).
    static func record(
        of response: VerifyReceiptResponse, environment: AppStoreEnvironment, bundleID: String? = nil
    ) -> VerifiedReceiptRecord {
        let bundleID = bundleID ?? response.receipt?.bundleID ?? ""
        let env = environment.rawValue
        return VerifiedReceiptRecord(
            environment: env, transactions: response.transactions.map { transaction($0, bundleID: bundleID, environment: env) },
            renewals: response.pendingRenewalInfo.map { renewal($0, environment: env) }, latestReceipt: response.latestReceipt)
    }

    static func transaction(_ t: Transaction, bundleID: String, environment: String) -> TransactionRecord {
        TransactionRecord(
            transactionID: t.transactionID, originalTransactionID: t.originalTransactionID, productID: t.productID,
            bundleID: bundleID, environment: environment, purchaseDate: t.purchaseDateMs,
            originalPurchaseDate: t.originalPurchaseDateMs, expiresDate: t.expiresDateMs,
            cancellationDate: t.cancellationDateMs, cancellationReason: t.cancellationReason, quantity: t.quantity,
            isTrialPeriod: t.isTrialPeriod, isInIntroOfferPeriod: t.isInIntroOfferPeriod, isUpgraded: t.isUpgraded,
            ownershipType: t.ownershipType, subscriptionGroupID: t.subscriptionGroupID,
            webOrderLineItemID: t.webOrderLineItemID, promotionalOfferID: t.promotionalOfferID,
            offerCodeRefName: t.offerCodeRefName, appAccountToken: t.appAccountToken,
            rawJSON: String(decoding: t.raw.jsonBytes, as: UTF8.self))
    }

    /// Verified StoreKit 2 data (a V2 notification's, or a client's signed transaction) as the same
    /// rows a receipt gives, stated at `statedAt` (the JWS's `signedDate`).
    static func record(
        transaction: SignedTransaction?, renewal: SignedRenewalInfo?, statedAt: Int64?
    ) -> VerifiedReceiptRecord {
        let environment = (transaction?.environment ?? renewal?.environment).flatMap(AppStoreEnvironment.init(appleName:))
        return VerifiedReceiptRecord(
            environment: (environment ?? .production).rawValue, transactions: transaction.map { [self.transaction($0)] } ?? [],
            renewals: renewal.map { [self.renewal($0)] } ?? [], latestReceipt: nil, statedAt: statedAt,
            renewalChangedAt: renewal?.signedDate)
    }

    /// §3.5 onto §1.6's columns: `revocationDate` is the cancellation date, `offerType` 1 the trial
    /// or intro flags, 2 and 4 (win-back) a promotional offer, 3 an offer code.
    static func transaction(_ t: SignedTransaction) -> TransactionRecord {
        let environment = t.environment.flatMap(AppStoreEnvironment.init(appleName:)) ?? .production
        let trial = t.offerType == 1 && t.offerDiscountType == "FREE_TRIAL"
        return TransactionRecord(
            transactionID: t.transactionID, originalTransactionID: t.originalTransactionID, productID: t.productID,
            bundleID: t.bundleID, environment: environment.rawValue, purchaseDate: t.purchaseDate,
            originalPurchaseDate: t.originalPurchaseDate, expiresDate: t.expiresDate, cancellationDate: t.revocationDate,
            cancellationReason: t.revocationReason.map(String.init), quantity: t.quantity, isTrialPeriod: trial,
            isInIntroOfferPeriod: t.offerType == 1 && !trial, isUpgraded: t.isUpgraded, ownershipType: t.inAppOwnershipType,
            subscriptionGroupID: t.subscriptionGroupID, webOrderLineItemID: t.webOrderLineItemID,
            promotionalOfferID: t.offerType == 2 || t.offerType == 4 ? t.offerIdentifier : nil,
            offerCodeRefName: t.offerType == 3 ? t.offerIdentifier : nil, appAccountToken: t.appAccountToken,
            rawJSON: unsigned(t.raw))
    }

    /// §3.6 onto §1.7's columns.
    static func renewal(_ r: SignedRenewalInfo) -> RenewalRecord {
        RenewalRecord(
            originalTransactionID: r.originalTransactionID, productID: r.productID, autoRenewProductID: r.autoRenewProductID,
            autoRenewStatus: r.autoRenewStatus, expirationIntent: r.expirationIntent,
            gracePeriodExpiresDate: r.gracePeriodExpiresDate, isInBillingRetryPeriod: r.isInBillingRetryPeriod,
            priceIncreaseStatus: r.priceIncreaseStatus.map(String.init),
            offerCodeRefName: r.offerType == 3 ? r.offerIdentifier : nil,
            promotionalOfferID: r.offerType == 2 || r.offerType == 4 ? r.offerIdentifier : nil,
            environment: (r.environment.flatMap(AppStoreEnvironment.init(appleName:)) ?? .production).rawValue,
            rawJSON: unsigned(r.raw))
    }

    /// A signed payload without `signedDate`: the same facts signed twice are the same row (the
    /// signed original stays in `notifications.body`).
    static func unsigned(_ payload: JSONValue) -> String {
        guard case .object(var fields) = payload else { return String(decoding: payload.jsonBytes, as: UTF8.self) }
        fields["signedDate"] = nil
        return String(decoding: JSONValue.object(fields).jsonBytes, as: UTF8.self)
    }

    static func renewal(_ r: PendingRenewalInfo, environment: String) -> RenewalRecord {
        RenewalRecord(
            originalTransactionID: r.originalTransactionID, productID: r.productID, autoRenewProductID: r.autoRenewProductID,
            autoRenewStatus: r.autoRenewStatus, expirationIntent: r.expirationIntent,
            gracePeriodExpiresDate: r.gracePeriodExpiresDateMs, isInBillingRetryPeriod: r.isInBillingRetryPeriod,
            priceConsentStatus: r.priceConsentStatus, priceIncreaseStatus: r.priceIncreaseStatus,
            offerCodeRefName: r.offerCodeRefName, promotionalOfferID: r.promotionalOfferID, environment: environment,
            rawJSON: String(decoding: r.raw.jsonBytes, as: UTF8.self))
    }

    /// A stored transaction mapped again from its raw JSON (`receiptd rederive`); nil when the raw
    /// JSON no longer parses as a transaction.
    static func remapped(_ t: TransactionRecord) -> TransactionRecord? {
        guard let json = try? JSONValue.parse(Array(t.rawJSON.utf8)) else { return nil }
        if let parsed = try? Transaction(json) { return transaction(parsed, bundleID: t.bundleID, environment: t.environment) }
        return (try? SignedTransaction(json)).map { transaction($0) }
    }

    /// A stored renewal snapshot mapped again from its raw JSON.
    static func remapped(_ r: RenewalRecord) -> RenewalRecord? {
        guard let json = try? JSONValue.parse(Array(r.rawJSON.utf8)) else { return nil }
        if let parsed = try? PendingRenewalInfo(json) { return renewal(parsed, environment: r.environment) }
        return (try? SignedRenewalInfo(json)).map { renewal($0) }
    }

    /// The pure derivation's input. Stored rows are where dates enter it: each is pinned into
    /// ``AppleDate/range`` (a row stored before dates were checked on entry cannot make the
    /// derivation's arithmetic overflow).
    static func facts(_ subscriber: SubscriberRecord) -> Facts {
        Facts(
            purchases: purchases(subscriber),
            renewals: subscriber.renewalHistory.map {
                RenewalObservation(observedAt: AppleDate.clamped($0.observedAt), sequence: $0.id, renewal: renewal($0.record))
            },
            transfers: subscriber.transfers.map {
                Transfer(
                    originalTransactionID: $0.originalTransactionID, productID: $0.productID, from: $0.from, to: $0.to,
                    at: AppleDate.clamped($0.at))
            })
    }

    /// Events as rows; their facts become a JSON object (times as RFC 3339).
    static func eventRecords(_ events: [LifecycleEvent]) -> [EventRecord] {
        events.map { e in
            EventRecord(
                key: e.key, type: e.kind.rawValue, at: e.at, productID: e.productID,
                originalTransactionID: e.originalTransactionID,
                transactionID: e.transactionID, factsJSON: String(decoding: json(e.facts).jsonBytes, as: UTF8.self))
        }
    }

    /// Facts as a JSON object: times RFC 3339, flags booleans, numbers integers.
    static func json(_ facts: [Fact]) -> JSONValue {
        var object: [Identifier: JSONValue] = [:]
        for f in facts {
            object[Identifier(f.name)] =
                switch f.value {
                case .text(let s): .string(s)
                case .time(let ms): .string(CivilTime.rfc3339(ms))
                case .flag(let b): .bool(b)
                case .number(let n): .int(n)
                }
        }
        return .object(object)
    }

    static func purchases(_ subscriber: SubscriberRecord) -> [Purchase] {
        subscriber.transactions.map { t in
            Purchase(
                transactionID: t.transactionID, originalTransactionID: t.originalTransactionID, productID: t.productID,
                purchaseDate: AppleDate.clamped(t.purchaseDate), originalPurchaseDate: AppleDate.clamped(t.originalPurchaseDate),
                expiresDate: AppleDate.clamped(t.expiresDate), cancellationDate: AppleDate.clamped(t.cancellationDate),
                cancellationReason: t.cancellationReason, isTrialPeriod: t.isTrialPeriod,
                isInIntroOfferPeriod: t.isInIntroOfferPeriod, isUpgraded: t.isUpgraded, ownershipType: t.ownershipType,
                environment: t.environment, subscriptionGroupID: t.subscriptionGroupID, promotionalOfferID: t.promotionalOfferID,
                offerCodeRefName: t.offerCodeRefName, quantity: t.quantity)
        }
    }

    static func renewal(_ r: RenewalRecord) -> Renewal {
        Renewal(
            originalTransactionID: r.originalTransactionID, productID: r.productID, autoRenewProductID: r.autoRenewProductID,
            autoRenewStatus: r.autoRenewStatus, expirationIntent: r.expirationIntent,
            gracePeriodExpiresDate: AppleDate.clamped(r.gracePeriodExpiresDate), isInBillingRetryPeriod: r.isInBillingRetryPeriod,
            priceConsentStatus: r.priceConsentStatus, priceIncreaseStatus: r.priceIncreaseStatus,
            offerCodeRefName: r.offerCodeRefName, promotionalOfferID: r.promotionalOfferID)
    }
}
