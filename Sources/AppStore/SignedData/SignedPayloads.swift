package import JSON

/// `responseBodyV2DecodedPayload` (Docs/apple-protocols.md §3.2), read tolerantly: unknown types and
/// subtypes are kept as raw strings (§3.4, as Apple's libraries do), unknown fields in `raw`.
package struct SignedNotification: Sendable, Equatable {
    /// §3.3, e.g. `.didRenew`; a type Apple added since, kept as sent.
    package var notificationType: NotificationTypeV2
    /// §3.4, e.g. `.billingRecovery`; a subtype Apple added since, kept as sent.
    package var subtype: NotificationSubtypeV2?
    package var notificationUUID: String
    package var version: String?
    /// Epoch ms.
    package var signedDate: Int64?
    /// From `data`, else `summary`, else `externalPurchaseToken`, else `appData` (§3.7 step 9).
    package var bundleID: String?
    package var appAppleID: Int64?
    /// `Production` or `Sandbox` as Apple spells it; for an external purchase token, from its id.
    package var environment: String?
    package var bundleVersion: String?
    /// `data.status` (§3.2): 1 active, 2 expired, 3 billing retry, 4 grace period, 5 revoked.
    package var status: Int64?
    package var consumptionRequestReason: String?
    /// The nested JWS, not yet verified.
    package var transactionJWS: String?
    package var renewalJWS: String?
    /// `appData.signedAppTransactionInfo` (`RESCIND_CONSENT`), not yet verified.
    package var appTransactionJWS: String?
    /// Filled by ``SignedDataVerifier/notification(_:)`` once each nested JWS verified.
    package var transaction: SignedTransaction?
    package var renewal: SignedRenewalInfo?
    package var appTransaction: SignedAppTransaction?
    package var raw: JSONValue

    package init?(_ v: JSONValue) throws(AppleDate.OutOfRange) {
        guard let type = v["notificationType"]?.string, let uuid = v["notificationUUID"]?.string else { return nil }
        notificationType = NotificationTypeV2(type)
        subtype = v["subtype"]?.string.map(NotificationSubtypeV2.init)
        notificationUUID = uuid
        version = v["version"]?.string
        signedDate = try v.date("signedDate")
        let data = v["data"]
        let container = data ?? v["summary"] ?? v["externalPurchaseToken"] ?? v["appData"]
        bundleID = container?["bundleId"]?.string
        appAppleID = container?["appAppleId"]?.int64
        if let token = v["externalPurchaseToken"], data == nil {
            environment = token["externalPurchaseId"]?.string?.hasPrefix("SANDBOX") == true ? "Sandbox" : "Production"
        } else {
            environment = container?["environment"]?.string
        }
        bundleVersion = data?["bundleVersion"]?.string
        status = data?["status"]?.int64
        consumptionRequestReason = data?["consumptionRequestReason"]?.string
        transactionJWS = data?["signedTransactionInfo"]?.string
        renewalJWS = data?["signedRenewalInfo"]?.string
        appTransactionJWS = data == nil ? v["appData"]?["signedAppTransactionInfo"]?.string : nil
        raw = v
    }

    /// `data.status` by name: the state Apple says the subscription is in at `signedDate`.
    package var statusName: String? { Self.statusName(status) }

    /// 1 `active`, 2 `expired`, 3 `billing_retry`, 4 `grace_period`, 5 `revoked` (§3.8).
    package static func statusName(_ status: Int64?) -> String? {
        switch status {
        case 1?: "active"
        case 2?: "expired"
        case 3?: "billing_retry"
        case 4?: "grace_period"
        case 5?: "revoked"
        case let other?: "unknown_\(other)"
        case nil: nil
        }
    }
}

/// `JWSTransactionDecodedPayload` (§3.5). Dates are epoch milliseconds.
package struct SignedTransaction: Sendable, Equatable {
    package var transactionID: String
    package var originalTransactionID: String
    package var bundleID: String
    package var productID: String
    package var webOrderLineItemID: String?
    package var subscriptionGroupID: String?
    package var purchaseDate: Int64?
    package var originalPurchaseDate: Int64?
    package var expiresDate: Int64?
    package var quantity: Int64?
    /// `Auto-Renewable Subscription`, `Non-Consumable`, `Consumable`, `Non-Renewing Subscription`.
    package var type: String?
    package var appAccountToken: String?
    /// The Apple Account's download of the app this purchase was made in (2025 on).
    package var appTransactionID: String?
    /// `PURCHASED` or `FAMILY_SHARED`.
    package var inAppOwnershipType: String?
    package var signedDate: Int64?
    /// Refunded or revoked from Family Sharing at this time: the transaction no longer entitles.
    package var revocationDate: Int64?
    /// 1: a problem with the app; 0: another reason.
    package var revocationReason: Int64?
    /// `REFUND_FULL`, `REFUND_PRORATED` or `FAMILY_REVOKE`.
    package var revocationType: String?
    /// The share refunded, in milliunits: 50000 is 50 %.
    package var revocationPercentage: Int64?
    package var isUpgraded: Bool
    /// 1 introductory, 2 promotional, 3 offer code, 4 win-back.
    package var offerType: Int64?
    package var offerIdentifier: String?
    package var offerDiscountType: String?
    /// ISO 8601 duration, e.g. `P1M`.
    package var offerPeriod: String?
    package var environment: String?
    package var transactionReason: String?
    package var storefront: String?
    /// Milliunits of `currency`: 9.99 is 9990.
    package var price: Int64?
    package var currency: String?
    /// `MONTHLY` for a monthly plan with a 12-month commitment.
    package var billingPlanType: String?
    /// `commitmentInfo`: `billingPeriodNumber`, `totalBillingPeriods`, `commitmentPrice`, `commitmentExpiresDate`.
    package var commitmentPeriodNumber: Int64?
    package var commitmentTotalPeriods: Int64?
    package var commitmentPrice: Int64?
    package var commitmentExpiresDate: Int64?
    package var raw: JSONValue

    package init?(_ v: JSONValue) throws(AppleDate.OutOfRange) {
        guard let id = v["transactionId"]?.string, let product = v["productId"]?.string, let bundle = v["bundleId"]?.string
        else { return nil }
        transactionID = id
        originalTransactionID = v["originalTransactionId"]?.string ?? id
        bundleID = bundle
        productID = product
        webOrderLineItemID = v["webOrderLineItemId"]?.string
        subscriptionGroupID = v["subscriptionGroupIdentifier"]?.string
        purchaseDate = try v.date("purchaseDate")
        originalPurchaseDate = try v.date("originalPurchaseDate")
        expiresDate = try v.date("expiresDate")
        quantity = v["quantity"]?.int64
        type = v["type"]?.string
        appAccountToken = v["appAccountToken"]?.string
        appTransactionID = v["appTransactionId"]?.string
        inAppOwnershipType = v["inAppOwnershipType"]?.string
        signedDate = try v.date("signedDate")
        revocationDate = try v.date("revocationDate")
        revocationReason = v["revocationReason"]?.int64
        revocationType = v["revocationType"]?.string
        revocationPercentage = v["revocationPercentage"]?.int64
        isUpgraded = v["isUpgraded"]?.bool ?? false
        offerType = v["offerType"]?.int64
        offerIdentifier = v["offerIdentifier"]?.string
        offerDiscountType = v["offerDiscountType"]?.string
        offerPeriod = v["offerPeriod"]?.string
        environment = v["environment"]?.string
        transactionReason = v["transactionReason"]?.string
        storefront = v["storefront"]?.string
        price = v["price"]?.int64
        currency = v["currency"]?.string
        billingPlanType = v["billingPlanType"]?.string
        let commitment = v["commitmentInfo"]
        commitmentPeriodNumber = commitment?["billingPeriodNumber"]?.int64
        commitmentTotalPeriods = commitment?["totalBillingPeriods"]?.int64
        commitmentPrice = commitment?["commitmentPrice"]?.int64
        commitmentExpiresDate = try commitment?.date("commitmentExpiresDate")
        raw = v
    }
}

/// `JWSRenewalInfoDecodedPayload` (§3.6).
package struct SignedRenewalInfo: Sendable, Equatable {
    package var originalTransactionID: String
    package var productID: String?
    package var autoRenewProductID: String?
    /// 1 on, 0 off.
    package var autoRenewStatus: Bool?
    package var expirationIntent: Int64?
    package var isInBillingRetryPeriod: Bool?
    package var gracePeriodExpiresDate: Int64?
    /// 0: consent requested, no answer yet; 1: consented, or no consent needed.
    package var priceIncreaseStatus: Int64?
    /// The offer that applies to the next renewal.
    package var offerType: Int64?
    package var offerIdentifier: String?
    package var signedDate: Int64?
    package var environment: String?
    package var renewalDate: Int64?
    package var appAccountToken: String?
    /// `MONTHLY` when the next renewal is of a monthly plan with a 12-month commitment.
    package var renewalBillingPlanType: String?
    /// `commitmentInfo` (`RenewalCommitmentInfo`, API 1.21): what happens when the commitment ends.
    package var commitmentAutoRenewStatus: Bool?
    package var commitmentAutoRenewProductID: String?
    package var commitmentRenewalDate: Int64?
    /// Milliunits of the renewal's currency.
    package var commitmentRenewalPrice: Int64?
    package var commitmentRenewalBillingPlanType: String?
    package var raw: JSONValue

    package init?(_ v: JSONValue) throws(AppleDate.OutOfRange) {
        guard let original = v["originalTransactionId"]?.string else { return nil }
        originalTransactionID = original
        productID = v["productId"]?.string
        autoRenewProductID = v["autoRenewProductId"]?.string
        autoRenewStatus = v["autoRenewStatus"]?.bool
        expirationIntent = v["expirationIntent"]?.int64
        isInBillingRetryPeriod = v["isInBillingRetryPeriod"]?.bool
        gracePeriodExpiresDate = try v.date("gracePeriodExpiresDate")
        priceIncreaseStatus = v["priceIncreaseStatus"]?.int64
        offerType = v["offerType"]?.int64
        offerIdentifier = v["offerIdentifier"]?.string
        signedDate = try v.date("signedDate")
        environment = v["environment"]?.string
        renewalDate = try v.date("renewalDate")
        appAccountToken = v["appAccountToken"]?.string
        renewalBillingPlanType = v["renewalBillingPlanType"]?.string
        let commitment = v["commitmentInfo"]
        commitmentAutoRenewStatus = commitment?["commitmentAutoRenewStatus"]?.bool
        commitmentAutoRenewProductID = commitment?["commitmentAutoRenewProductId"]?.string
        commitmentRenewalDate = try commitment?.date("commitmentRenewalDate")
        commitmentRenewalPrice = commitment?["commitmentRenewalPrice"]?.int64
        commitmentRenewalBillingPlanType = commitment?["commitmentRenewalBillingPlanType"]?.string
        raw = v
    }
}

/// StoreKit's `AppTransaction`: Apple's signed statement that an Apple Account got the app
/// (`JWSAppTransactionDecodedPayload`, https://developer.apple.com/documentation/appstoreserverapi/jwsapptransactiondecodedpayload),
/// whether or not it ever bought anything in it. `appTransactionId` names that Apple Account and
/// app for good (https://developer.apple.com/documentation/storekit/apptransaction/apptransactionid).
package struct SignedAppTransaction: Sendable, Equatable {
    /// Unique per Apple Account and app; usable as a promotional offer's `transactionId`.
    package var appTransactionID: String?
    package var bundleID: String
    package var appAppleID: Int64?
    /// `receiptType`: `Production`, `Sandbox`, `Xcode`.
    package var environment: String?
    package var applicationVersion: String?
    /// The version the Apple Account first got: what grandfathering rules compare.
    package var originalApplicationVersion: String?
    package var originalPurchaseDate: Int64?
    package var receiptCreationDate: Int64?
    package var preorderDate: Int64?
    /// `iOS`, `macOS`, `tvOS`, `visionOS`.
    package var originalPlatform: String?
    package var signedDate: Int64?
    package var raw: JSONValue

    package init?(_ v: JSONValue) throws(AppleDate.OutOfRange) {
        guard let bundle = v["bundleId"]?.string else { return nil }
        bundleID = bundle
        appTransactionID = v["appTransactionId"]?.string
        appAppleID = v["appAppleId"]?.int64
        environment = v["receiptType"]?.string
        applicationVersion = v["applicationVersion"]?.string
        originalApplicationVersion = v["originalApplicationVersion"]?.string
        originalPurchaseDate = try v.date("originalPurchaseDate")
        receiptCreationDate = try v.date("receiptCreationDate")
        preorderDate = try v.date("preorderDate")
        originalPlatform = v["originalPlatform"]?.string
        signedDate = try v.date("signedDate")
        raw = v
    }
}

/// Apple's Retention Messaging real-time request (`DecodedRealtimeRequestBody`): a customer is
/// viewing the subscription `originalTransactionID` and may cancel it.
package struct SignedRealtimeRequest: Sendable, Equatable {
    package var originalTransactionID: String
    package var appAppleID: Int64?
    package var productID: String
    package var userLocale: String
    /// Unique per request: Apple's retries of one request carry the same.
    package var requestIdentifier: String
    package var signedDate: Int64?
    /// `Production` or `Sandbox`.
    package var environment: String?

    package init?(_ v: JSONValue) throws(AppleDate.OutOfRange) {
        guard let original = v["originalTransactionId"]?.string, let product = v["productId"]?.string,
            let request = v["requestIdentifier"]?.string
        else { return nil }
        originalTransactionID = original
        productID = product
        requestIdentifier = request
        userLocale = v["userLocale"]?.string ?? ""
        appAppleID = v["appAppleId"]?.int64
        signedDate = try v.date("signedDate")
        environment = v["environment"]?.string
    }
}
