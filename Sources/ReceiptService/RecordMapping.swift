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
            environment: env,
            transactions: response.transactions.map { t in
                TransactionRecord(
                    transactionID: t.transactionID, originalTransactionID: t.originalTransactionID, productID: t.productID,
                    bundleID: bundleID, environment: env, purchaseDate: t.purchaseDateMs,
                    originalPurchaseDate: t.originalPurchaseDateMs, expiresDate: t.expiresDateMs,
                    cancellationDate: t.cancellationDateMs, cancellationReason: t.cancellationReason, quantity: t.quantity,
                    isTrialPeriod: t.isTrialPeriod, isInIntroOfferPeriod: t.isInIntroOfferPeriod, isUpgraded: t.isUpgraded,
                    ownershipType: t.ownershipType, subscriptionGroupID: t.subscriptionGroupID,
                    webOrderLineItemID: t.webOrderLineItemID, promotionalOfferID: t.promotionalOfferID,
                    offerCodeRefName: t.offerCodeRefName, rawJSON: String(decoding: t.raw.jsonBytes, as: UTF8.self))
            },
            renewals: response.pendingRenewalInfo.map { r in
                RenewalRecord(
                    originalTransactionID: r.originalTransactionID, productID: r.productID,
                    autoRenewProductID: r.autoRenewProductID, autoRenewStatus: r.autoRenewStatus,
                    expirationIntent: r.expirationIntent, gracePeriodExpiresDate: r.gracePeriodExpiresDateMs,
                    isInBillingRetryPeriod: r.isInBillingRetryPeriod, priceConsentStatus: r.priceConsentStatus,
                    priceIncreaseStatus: r.priceIncreaseStatus, offerCodeRefName: r.offerCodeRefName,
                    promotionalOfferID: r.promotionalOfferID, environment: env,
                    rawJSON: String(decoding: r.raw.jsonBytes, as: UTF8.self))
            },
            latestReceipt: response.latestReceipt)
    }

    static func purchases(_ subscriber: SubscriberRecord) -> [Purchase] {
        subscriber.transactions.map { t in
            Purchase(
                transactionID: t.transactionID, originalTransactionID: t.originalTransactionID, productID: t.productID,
                purchaseDate: t.purchaseDate, originalPurchaseDate: t.originalPurchaseDate, expiresDate: t.expiresDate,
                cancellationDate: t.cancellationDate, isTrialPeriod: t.isTrialPeriod,
                isInIntroOfferPeriod: t.isInIntroOfferPeriod,
                isUpgraded: t.isUpgraded, ownershipType: t.ownershipType, environment: t.environment)
        }
    }

    static func renewals(_ subscriber: SubscriberRecord) -> [Renewal] {
        subscriber.renewals.map { r in
            Renewal(
                originalTransactionID: r.originalTransactionID, autoRenewProductID: r.autoRenewProductID,
                autoRenewStatus: r.autoRenewStatus, expirationIntent: r.expirationIntent,
                gracePeriodExpiresDate: r.gracePeriodExpiresDate, isInBillingRetryPeriod: r.isInBillingRetryPeriod)
        }
    }
}
