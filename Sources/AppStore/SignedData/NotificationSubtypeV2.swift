/// An App Store Server Notifications V2 subtype (Docs/apple-protocols.md §3.4), typed as Apple's own
/// libraries type it: a case for each subtype Apple documents, and the text of one it adds later
/// kept as sent (``other(_:)``).
package enum NotificationSubtypeV2: AppleVocabulary {
    case initialBuy
    case resubscribe
    case upgrade
    case downgrade
    case autoRenewEnabled
    case autoRenewDisabled
    case billingRecovery
    case gracePeriod
    case voluntary
    case billingRetry
    case priceIncrease
    case productNotForSale
    case pending
    case accepted
    case summary
    case failure
    case unreported
    /// A subtype this version of receiptd does not know, as Apple sent it.
    case other(String)

    /// Every subtype §3.4 documents.
    package static let known: [NotificationSubtypeV2] = [
        .initialBuy, .resubscribe, .upgrade, .downgrade, .autoRenewEnabled, .autoRenewDisabled, .billingRecovery,
        .gracePeriod, .voluntary, .billingRetry, .priceIncrease, .productNotForSale, .pending, .accepted, .summary,
        .failure, .unreported,
    ]

    /// As Apple spells it: `AUTO_RENEW_DISABLED`.
    package var rawValue: String {
        switch self {
        case .initialBuy: "INITIAL_BUY"
        case .resubscribe: "RESUBSCRIBE"
        case .upgrade: "UPGRADE"
        case .downgrade: "DOWNGRADE"
        case .autoRenewEnabled: "AUTO_RENEW_ENABLED"
        case .autoRenewDisabled: "AUTO_RENEW_DISABLED"
        case .billingRecovery: "BILLING_RECOVERY"
        case .gracePeriod: "GRACE_PERIOD"
        case .voluntary: "VOLUNTARY"
        case .billingRetry: "BILLING_RETRY"
        case .priceIncrease: "PRICE_INCREASE"
        case .productNotForSale: "PRODUCT_NOT_FOR_SALE"
        case .pending: "PENDING"
        case .accepted: "ACCEPTED"
        case .summary: "SUMMARY"
        case .failure: "FAILURE"
        case .unreported: "UNREPORTED"
        case .other(let text): text
        }
    }
}
