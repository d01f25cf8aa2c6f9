/// An App Store Server Notifications V2 type (Docs/apple-protocols.md §3.3), typed as Apple's own libraries type it: a case for
/// each type Apple documents, and the text of one it adds later kept as sent (``other(_:)``).
package enum NotificationTypeV2: AppleVocabulary {
    case subscribed
    case didRenew
    case didChangeRenewalPref
    case didChangeRenewalStatus
    case offerRedeemed
    case didFailToRenew
    case gracePeriodExpired
    case expired
    case priceIncrease
    case refund
    case refundDeclined
    case refundReversed
    case consumptionRequest
    case revoke
    case renewalExtended
    case renewalExtension
    case oneTimeCharge
    case test
    case externalPurchaseToken
    case metadataUpdate
    case migration
    case priceChange
    case rescindConsent
    /// A type this version of receiptd does not know, as Apple sent it.
    case other(String)

    /// Every type Docs/apple-protocols.md §3.3 documents.
    package static let known: [NotificationTypeV2] = [
        .subscribed, .didRenew, .didChangeRenewalPref, .didChangeRenewalStatus, .offerRedeemed, .didFailToRenew,
        .gracePeriodExpired, .expired, .priceIncrease, .refund, .refundDeclined, .refundReversed, .consumptionRequest,
        .revoke, .renewalExtended, .renewalExtension, .oneTimeCharge, .test, .externalPurchaseToken, .metadataUpdate,
        .migration, .priceChange, .rescindConsent,
    ]

    /// As Apple spells it: `DID_RENEW`.
    package var rawValue: String {
        switch self {
        case .subscribed: "SUBSCRIBED"
        case .didRenew: "DID_RENEW"
        case .didChangeRenewalPref: "DID_CHANGE_RENEWAL_PREF"
        case .didChangeRenewalStatus: "DID_CHANGE_RENEWAL_STATUS"
        case .offerRedeemed: "OFFER_REDEEMED"
        case .didFailToRenew: "DID_FAIL_TO_RENEW"
        case .gracePeriodExpired: "GRACE_PERIOD_EXPIRED"
        case .expired: "EXPIRED"
        case .priceIncrease: "PRICE_INCREASE"
        case .refund: "REFUND"
        case .refundDeclined: "REFUND_DECLINED"
        case .refundReversed: "REFUND_REVERSED"
        case .consumptionRequest: "CONSUMPTION_REQUEST"
        case .revoke: "REVOKE"
        case .renewalExtended: "RENEWAL_EXTENDED"
        case .renewalExtension: "RENEWAL_EXTENSION"
        case .oneTimeCharge: "ONE_TIME_CHARGE"
        case .test: "TEST"
        case .externalPurchaseToken: "EXTERNAL_PURCHASE_TOKEN"
        case .metadataUpdate: "METADATA_UPDATE"
        case .migration: "MIGRATION"
        case .priceChange: "PRICE_CHANGE"
        case .rescindConsent: "RESCIND_CONSENT"
        case .other(let text): text
        }
    }
}
