package import AppStore
package import Entitlements
package import Identifiers

/// Why a use case refused or failed. Each case has a stable ``code``; the HTTP edge maps each to
/// one status and error body (ReceiptService's `APIError`), the CLI prints it.
package enum ReceiptError: Error, Sendable {
    /// The input breaks a rule; the message names the field.
    case invalidRequest(String)
    case subscriberNotFound
    /// Under the ownership policy, another app user holds the receipt's purchases.
    case receiptInUse
    /// An app posted a bare transaction id of a purchase another user holds: only the device's
    /// proof (the signed transaction, the receipt) may move it (``Possession``).
    case proofRequired
    /// An offer was asked for naming a transaction the customer does not hold.
    case transactionNotHeld
    /// The person was erased while their request was being answered (Apple or Google asked):
    /// nothing of theirs was written back.
    case erasedMeanwhile
    /// Apple refused the receipt (21002, 21003, 21010, …).
    case invalidReceipt(appleStatus: Int)
    /// The App Store Server API knows no such transaction id (`4040010` in production and sandbox,
    /// or `4000006`).
    case invalidTransactionID
    /// The receipt or signed transaction belongs to another app.
    case bundleMismatch(String, appleStatus: Int? = nil)
    /// The store refused receiptd's own request: Apple its shared secret, URLs or token (with
    /// Apple's status when it gave one); Google Play its service account (key, Play Console
    /// permissions).
    case storeMisconfigured(Store, storeStatus: Int? = nil)
    /// The store could not answer now; `lastKnown` is what the user had (kept, never revoked).
    case storeUnavailable(Store, storeStatus: Int? = nil, retryAfterSeconds: Int, lastKnown: LastKnown? = nil)
    /// What the request needs is not configured on this receiptd.
    case notConfigured(Capability)
    /// Apple's signed data did not verify.
    case signedData(SignedDataError)
    /// A V1 notification's password is not the shared secret.
    case wrongNotificationPassword
    /// A notification for an app this service does not serve.
    case wrongApp(String)
    /// Storage failed where the sender must retry (Apple re-delivers a notification on 5xx).
    case notStored
    /// Look Up Order ID: Apple knows no such order.
    case orderNotFound
    /// The subscriber holds no such auto-renewable subscription (or several, and none was named).
    case subscriptionNotFound(String)
    /// Apple refused a support request (an extension it does not allow, …); Apple's error code.
    case appStoreRefused(String, errorCode: Int?)
    /// No webhook endpoint has that name.
    case webhookEndpointNotFound
    /// No webhook delivery has that id.
    case webhookDeliveryNotFound
    /// The webhook delivery is being sent right now; ask again when its attempt has ended.
    case webhookDeliveryInFlight
    /// The alias is already another subscriber's alias.
    case aliasTaken
    /// Both ids hold purchases and the ownership policy keeps them apart (``AddAlias``).
    case mergeConflict
    /// No mass extension has that request id.
    case massExtensionNotFound
    /// A request id already names another request (a retry must ask the same).
    case requestIDReused(String)
    /// No stored transaction has that id.
    case purchaseNotFound
    /// No promotion of that entitlement is running for the subscriber.
    case promotionNotFound
    /// Google Play knows no purchase with that token for that app (or no longer: 60 days after it ended).
    case invalidPurchaseToken
    /// The rules do not allow the customer this offer: the rule that said no, and why.
    case offerNotEligible(String, String)
    /// A customer asked for more offer signatures a minute than allowed.
    case offerRateLimited(retryAfterSeconds: Int)
    /// A Pub/Sub push without a valid OIDC token (Google's keys, the audience, the service account).
    case unauthenticatedPush(String)
    /// An unexpected fault (storage, an impossible state); details are logged, never answered.
    case internalFault

    /// What a request may need that a receiptd may lack.
    package enum Capability: String, Sendable {
        /// The App Store Server API: an In-App Purchase key for the app's account.
        case serverAPI = "server_api"
        /// Google Play: a service account and the app's package.
        case googlePlay = "google_play"
        /// Signing offers: the In-App Purchase key, or `appStore.offers.*`.
        case offers

        /// For people: what to configure.
        var message: String {
            switch self {
            case .serverAPI:
                "This needs the App Store Server API: configure appStore.serverApi.keyId, issuerId and the In-App Purchase key."
            case .googlePlay:
                "Google Play purchases need a service account: configure googlePlay.packages and RECEIPTD_GOOGLE_PLAY_SERVICE_ACCOUNT_KEY."
            case .offers:
                "Offers are signed with the In-App Purchase key: configure appStore.serverApi (or appStore.offers) keyId, issuerId and the key."
            }
        }
    }

    /// The stable, machine-readable name.
    package var code: String {
        switch self {
        case .invalidRequest: "invalid_request"
        case .subscriberNotFound: "subscriber_not_found"
        case .receiptInUse: "receipt_in_use"
        case .proofRequired: "proof_required"
        case .transactionNotHeld: "transaction_not_held"
        case .erasedMeanwhile: "erased_meanwhile"
        case .invalidReceipt: "invalid_receipt"
        case .invalidTransactionID: "invalid_transaction_id"
        case .bundleMismatch: "bundle_mismatch"
        case .storeMisconfigured(let store, _): store.rules.errorName + "_misconfigured"
        case .storeUnavailable(let store, _, _, _): store.rules.errorName + "_unavailable"
        case .notConfigured(let capability): capability.rawValue + "_not_configured"
        case .signedData(let error): error.code
        case .wrongNotificationPassword: "invalid_password"
        case .wrongApp: "wrong_app"
        case .notStored: "temporarily_unavailable"
        case .orderNotFound: "order_not_found"
        case .subscriptionNotFound: "subscription_not_found"
        case .appStoreRefused: "app_store_refused"
        case .webhookEndpointNotFound: "webhook_endpoint_not_found"
        case .webhookDeliveryNotFound: "webhook_delivery_not_found"
        case .webhookDeliveryInFlight: "webhook_delivery_in_flight"
        case .aliasTaken: "alias_taken"
        case .mergeConflict: "merge_conflict"
        case .promotionNotFound: "promotion_not_found"
        case .massExtensionNotFound: "mass_extension_not_found"
        case .requestIDReused: "request_id_reused"
        case .purchaseNotFound: "purchase_not_found"
        case .invalidPurchaseToken: "invalid_purchase_token"
        case .unauthenticatedPush: "unauthenticated_push"
        case .offerNotEligible: "offer_not_eligible"
        case .offerRateLimited: "rate_limited"
        case .internalFault: "internal_error"
        }
    }

    /// For people: what went wrong and what to do; never a secret or the request's bytes.
    package var message: String {
        switch self {
        case .invalidRequest(let message): message
        case .subscriberNotFound: "No subscriber has that app_user_id."
        case .receiptInUse: "The receipt's purchases belong to another app user."
        case .proofRequired:
            "Another app user holds this purchase; a transaction id does not prove whose it is. Post the signed transaction or the receipt."
        case .transactionNotHeld: "`transaction_id` is not a transaction of this customer's."
        case .erasedMeanwhile: "The app user was erased while this request was answered; nothing was stored."
        case .invalidReceipt: "Apple did not accept the receipt."
        case .invalidTransactionID: "Apple knows no purchase with that transaction id."
        case .bundleMismatch(let message, _): message
        case .storeMisconfigured(let store, _): store.rules.misconfigured
        case .storeUnavailable(let store, _, _, _): "\(store.rules.nameInSentences) could not answer now; retry later."
        case .notConfigured(let capability): capability.message
        case .signedData(let error): error.description
        case .wrongNotificationPassword: "The notification's password is not this app's shared secret."
        case .wrongApp(let message): message
        case .notStored: "receiptd could not store this now; retry."
        case .orderNotFound: "Apple knows no order with that id."
        case .subscriptionNotFound(let message): message
        case .appStoreRefused(let message, _): message
        case .webhookEndpointNotFound: "No webhook endpoint has that name (webhooks.endpoints)."
        case .webhookDeliveryNotFound: "No webhook delivery has that id."
        case .webhookDeliveryInFlight: "That delivery is being sent right now; retry when its attempt has ended."
        case .aliasTaken: "`alias` is already an alias of another subscriber."
        case .mergeConflict:
            "Both ids hold purchases and the ownership policy (ownership.policy) keeps one user's purchases from another."
        case .purchaseNotFound: "No stored purchase has that transaction id."
        case .promotionNotFound: "The subscriber has no running promotion of that entitlement."
        case .massExtensionNotFound: "No mass extension has that request id."
        case .requestIDReused(let message): message
        case .invalidPurchaseToken: "Google Play knows no purchase with that token for that app."
        case .unauthenticatedPush(let message): message
        case .offerNotEligible(_, let decision): decision
        case .offerRateLimited: "Too many offer signatures for this customer; slow down."
        case .internalFault: "An internal error occurred."
        }
    }

    /// The status Apple answered, when the refusal comes from Apple's answer.
    package var appleStatus: Int? {
        switch self {
        case .invalidReceipt(let status): status
        case .bundleMismatch(_, let status), .storeMisconfigured(.appStore, let status),
            .storeUnavailable(.appStore, let status, _, _):
            status
        case .appStoreRefused(_, let code): code
        default: nil
        }
    }

    /// The user's last stored document while the store is down, and when Apple last spoke of them.
    package struct LastKnown: Sendable {
        package var snapshot: SubscriberSnapshot
        /// Epoch ms of the last verification that reached Apple; nil when none is logged.
        package var verifiedAt: Int64?
    }
}

/// A subscriber's document as of `now`, with the version that counts its changes.
package struct SubscriberSnapshot: Sendable {
    package var document: SubscriberDocument
    package var version: Int64
    package var now: Int64
    /// The purchase identifiers the posted proof states; nil: a backend asked, and the answer may
    /// name every purchase. An app's answer names only the purchases these name
    /// (``SubscriberDocument/visible(provenBy:)``).
    package var proven: Set<Identifier>?

    package init(document: SubscriberDocument, version: Int64, now: Int64) {
        self.document = document
        self.version = version
        self.now = now
    }
}
