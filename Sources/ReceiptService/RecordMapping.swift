import AppStore
import Entitlements
import Storage

/// Moves facts between the modules that must not know each other: Apple's wire models → storage
/// rows → the pure domain's inputs.
enum RecordMapping {
    static func record(of response: VerifyReceiptResponse, environment: AppStoreEnvironment) -> VerifiedReceiptRecord {
        let bundleID = response.receipt?.bundleID ?? ""
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
            offerCodeRefName: t.offerCodeRefName, rawJSON: String(decoding: t.raw.jsonBytes, as: UTF8.self))
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
        guard let json = try? JSONValue.parse(Array(t.rawJSON.utf8)), let parsed = Transaction(json) else { return nil }
        return transaction(parsed, bundleID: t.bundleID, environment: t.environment)
    }

    /// A stored renewal snapshot mapped again from its raw JSON.
    static func remapped(_ r: RenewalRecord) -> RenewalRecord? {
        guard let json = try? JSONValue.parse(Array(r.rawJSON.utf8)), let parsed = PendingRenewalInfo(json) else { return nil }
        return renewal(parsed, environment: r.environment)
    }

    /// The pure derivation's input.
    static func facts(_ subscriber: SubscriberRecord) -> Facts {
        Facts(
            purchases: purchases(subscriber),
            renewals: subscriber.renewalHistory.map {
                RenewalObservation(observedAt: $0.observedAt, sequence: $0.id, renewal: renewal($0.record))
            },
            transfers: subscriber.transfers.map {
                Transfer(
                    originalTransactionID: $0.originalTransactionID, productID: $0.productID, from: $0.from, to: $0.to, at: $0.at)
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
        var object: [String: JSONValue] = [:]
        for f in facts {
            object[f.name] =
                switch f.value {
                case .text(let s): .string(s)
                case .time(let ms): .string(CivilTime.rfc3339(ms))
                case .flag(let b): .bool(b)
                case .number(let n): .number(Double(n), text: String(n))
                }
        }
        return .object(object)
    }

    static func purchases(_ subscriber: SubscriberRecord) -> [Purchase] {
        subscriber.transactions.map { t in
            Purchase(
                transactionID: t.transactionID, originalTransactionID: t.originalTransactionID, productID: t.productID,
                purchaseDate: t.purchaseDate, originalPurchaseDate: t.originalPurchaseDate, expiresDate: t.expiresDate,
                cancellationDate: t.cancellationDate, cancellationReason: t.cancellationReason, isTrialPeriod: t.isTrialPeriod,
                isInIntroOfferPeriod: t.isInIntroOfferPeriod, isUpgraded: t.isUpgraded, ownershipType: t.ownershipType,
                environment: t.environment, subscriptionGroupID: t.subscriptionGroupID, promotionalOfferID: t.promotionalOfferID,
                offerCodeRefName: t.offerCodeRefName, quantity: t.quantity)
        }
    }

    static func renewal(_ r: RenewalRecord) -> Renewal {
        Renewal(
            originalTransactionID: r.originalTransactionID, productID: r.productID, autoRenewProductID: r.autoRenewProductID,
            autoRenewStatus: r.autoRenewStatus, expirationIntent: r.expirationIntent,
            gracePeriodExpiresDate: r.gracePeriodExpiresDate, isInBillingRetryPeriod: r.isInBillingRetryPeriod,
            priceConsentStatus: r.priceConsentStatus, priceIncreaseStatus: r.priceIncreaseStatus,
            offerCodeRefName: r.offerCodeRefName, promotionalOfferID: r.promotionalOfferID)
    }
}
