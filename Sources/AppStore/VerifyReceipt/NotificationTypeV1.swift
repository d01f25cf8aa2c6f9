/// An App Store Server Notifications V1 type (Docs/apple-protocols.md §2.3), typed as Apple's own libraries type it: a case for
/// each type Apple documents, and the text of one it adds later kept as sent (``other(_:)``).
package enum NotificationTypeV1: AppleVocabulary {
    case initialBuy
    case didRenew
    case interactiveRenewal
    case didChangeRenewalPref
    case didChangeRenewalStatus
    case didFailToRenew
    case didRecover
    case cancel
    case refund
    case revoke
    case priceIncreaseConsent
    case consumptionRequest
    case renewal
    /// A type this version of receiptd does not know, as Apple sent it.
    case other(String)

    /// Every type Docs/apple-protocols.md §2.3 documents.
    package static let known: [NotificationTypeV1] = [
        .initialBuy, .didRenew, .interactiveRenewal, .didChangeRenewalPref, .didChangeRenewalStatus, .didFailToRenew,
        .didRecover, .cancel, .refund, .revoke, .priceIncreaseConsent, .consumptionRequest, .renewal,
    ]

    /// As Apple spells it: `DID_RENEW`.
    package var rawValue: String {
        switch self {
        case .initialBuy: "INITIAL_BUY"
        case .didRenew: "DID_RENEW"
        case .interactiveRenewal: "INTERACTIVE_RENEWAL"
        case .didChangeRenewalPref: "DID_CHANGE_RENEWAL_PREF"
        case .didChangeRenewalStatus: "DID_CHANGE_RENEWAL_STATUS"
        case .didFailToRenew: "DID_FAIL_TO_RENEW"
        case .didRecover: "DID_RECOVER"
        case .cancel: "CANCEL"
        case .refund: "REFUND"
        case .revoke: "REVOKE"
        case .priceIncreaseConsent: "PRICE_INCREASE_CONSENT"
        case .consumptionRequest: "CONSUMPTION_REQUEST"
        case .renewal: "RENEWAL"
        case .other(let text): text
        }
    }
}
