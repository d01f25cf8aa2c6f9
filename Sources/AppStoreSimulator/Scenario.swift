import Foundation

/// The scripted receipts the simulator knows. A receipt's content (its base64-decoded bytes) is
/// `<scenario>` or `<scenario>:<tag>`; the tag makes transaction ids distinct per receipt, so two
/// users can hold different purchases of the same scenario.
package enum Scenario: String, Sendable, CaseIterable {
    case activeMonthly = "active_monthly"
    case trial
    case intro
    case expiredVoluntary = "expired_voluntary"
    case expiredBillingError = "expired_billing_error"
    case expiredPriceIncrease = "expired_price_increase"
    case expiredNotForSale = "expired_not_for_sale"
    case expiredOther = "expired_other"
    case refunded
    case gracePeriod = "grace_period"
    case billingRetry = "billing_retry"
    case upgraded
    case familyShared = "family_shared"
    case nonConsumable = "non_consumable"
    case consumable
    /// Auto-renew turned off; still active until the period ends.
    case cancelled
    /// A yearly subscription that renews into the monthly product (a downgrade at the next renewal).
    case downgradePending = "downgrade_pending"
    /// Apple asked for consent to a price increase; no answer yet.
    case priceIncreasePending = "price_increase_pending"
    /// The current period was bought with an offer code (`offer_code_ref_name`).
    case offerCode = "offer_code"
    /// The current period was bought with a promotional offer (`promotional_offer_id`).
    case promotionalOffer = "promotional_offer"
    /// The previous period was refunded; the current one is not.
    case pastRefund = "past_refund"
    /// A family member's shared subscription, revoked.
    case familyRevoked = "family_revoked"
    /// A non-renewing 30-day pass (`pass_30d`).
    case nonRenewing = "non_renewing"
    /// Production answers 21007; sandbox answers the active monthly subscription.
    case sandboxOnly = "sandbox_only"
    /// Sandbox answers 21008; production answers the active monthly subscription.
    case productionOnly = "production_only"
    /// 21005 on the first call for the receipt, then the active monthly subscription.
    case unavailableOnce = "unavailable_once"
    /// 21100 with the retry flag on the first call, then the active monthly subscription.
    case retryableOnce = "retryable_once"
    /// 21002 on every call: malformed receipt data, or a temporary problem (Apple cannot say which).
    case malformed = "status_21002"
    /// 21005 on every call: Apple's receipt server is down.
    case serverUnavailable = "status_21005"
    case notAuthenticated = "status_21003"
    case accountNotFound = "status_21010"
    /// A monthly subscription that keeps renewing as the simulator's clock moves: each answer holds
    /// every 30-day period begun by then (the first began 5 days before the receipt was first seen).
    case renewing
    /// In billing retry (expired 5 days before first seen); from 2 days after first seen Apple has
    /// recovered the payment and a new period runs.
    case billingRetryRecovers = "billing_retry_recovers"
    /// A long-lived subscriber: 1,000 weekly periods of `weekly` in one receipt, the last one
    /// running (the benchmarks' large ingest).
    case longHistory = "long_history"
    /// A monthly plan with a 12-month commitment (App Store Server API only: verifyReceipt states
    /// none of it): 14 monthly periods, so the first commitment's 12 and months 1–2 of the second,
    /// whose renewal the customer cancelled (billing goes on through its month 12).
    case commitment

    /// The `expiration_intent` of the expired scenarios (Docs/apple-protocols.md §1.7).
    var expirationIntent: Int? {
        switch self {
        case .expiredVoluntary: 1
        case .expiredBillingError, .billingRetry, .gracePeriod, .billingRetryRecovers: 2
        case .expiredPriceIncrease: 3
        case .expiredNotForSale: 4
        case .expiredOther: 5
        default: nil
        }
    }
}

extension Scenario {
    /// The receipt data (base64) whose content is `content`: `<scenario>` or `<scenario>:<tag>`.
    package static func receiptData(_ content: String) -> String { Data(content.utf8).base64EncodedString() }
}
