import Entitlements
import JSON

/// The purchases the Google Play stand-in knows. A token is `gp1.<scenario>.<tag>`: the scenario
/// scripts the purchase (dates relative to when the simulator first saw the token, so reading it
/// again gets the same answer), the tag makes it a purchase of its own (its order ids).
package enum PlayScenario: String, Sendable, CaseIterable {
    // Subscriptions (`monthly` unless said; 9.99 EUR a month).
    case active
    /// The first week, free (`offerPhase.freeTrial`).
    case trial
    /// An introductory price (`offerPhase.introductoryPrice`).
    case intro
    /// The customer canceled; access lasts until the period ends.
    case canceled
    /// Canceled by the customer, and ended ten days ago.
    case expired
    /// A renewal payment failed; Google's grace period (its `expiryTime`) ends in two days.
    case gracePeriod = "grace_period"
    /// The grace period is over and Google holds the subscription: no access.
    case accountHold = "account_hold"
    /// Paused by the customer; resumes in twenty days.
    case paused
    /// Bought with a payment that has not completed.
    case pending
    /// The pending payment was canceled.
    case pendingCanceled = "pending_canceled"
    /// The monthly subscription `upgraded` replaced (`replacementCancellation`), ended at the upgrade.
    case replaced
    /// `yearly`, bought as an upgrade of `gp1.replaced.<tag>` (its `linkedPurchaseToken`).
    case upgraded
    /// A monthly plan with a 12-payment commitment (`installmentDetails`), its first payment made.
    case installments
    /// A price increase the customer has not accepted yet.
    case priceIncrease = "price_increase"
    /// A license tester's purchase (`testPurchase`).
    case test
    /// Renews every 30 days as the simulator's clock moves (orders `…..0`, `…..1`, …).
    case renewing
    // One-time products.
    /// `lifetime`, a non-consumable.
    case lifetime
    /// `coins_100`, a consumable.
    case coins
    /// A one-time purchase whose payment has not completed.
    case productPending = "product_pending"
    /// A one-time purchase canceled before it completed.
    case productCancelled = "product_cancelled"

    package var isSubscription: Bool {
        switch self {
        case .lifetime, .coins, .productPending, .productCancelled: false
        default: true
        }
    }

    /// The product it is a purchase of.
    package var productID: String {
        switch self {
        case .upgraded: "yearly"
        case .lifetime, .productPending, .productCancelled: "lifetime"
        case .coins: "coins_100"
        default: "monthly"
        }
    }

    /// The token of a purchase of `self` tagged `tag`.
    package func token(tag: String) -> String { "gp1.\(rawValue).\(tag)" }

    /// A token's scenario and tag; nil for a token the simulator did not script.
    package static func parse(_ token: String) -> (PlayScenario, String)? {
        let parts = token.split(separator: ".", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0] == "gp1", let scenario = PlayScenario(rawValue: String(parts[1])), !parts[2].isEmpty
        else { return nil }
        return (scenario, String(parts[2]))
    }
}

/// A scripted purchase's resource at a moment: what `subscriptionsv2.get` or `productsv2` answers.
struct PlayScript {
    let scenario: PlayScenario
    let tag: String
    /// When the simulator first saw the token.
    let anchor: Int64
    let now: Int64
    let acknowledged: Bool
    /// When Google voided the purchase (a refund, a chargeback), if it did.
    let voidedAt: Int64?
    /// When a pending one-time purchase's payment completed, if it did.
    var paidAt: Int64? = nil

    static let day: Int64 = 86_400_000

    /// The purchase's first order id: `GPA.` and digits from the scenario and tag (stable).
    var orderID: String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in "\(scenario.rawValue):\(tag)".utf8 {
            hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3
        }
        let digits = String(hash % 10_000_000_000_000_000)
        let d = Array(String(repeating: "0", count: 16 - digits.count) + digits)
        return "GPA.33\(String(d[0..<2]))-\(String(d[2..<6]))-\(String(d[6..<10]))-\(String(d[10..<16]))"
    }

    static func time(_ ms: Int64) -> JSONValue { .string(CivilTime.rfc3339(ms)) }

    static func money(_ milliunits: Int64, _ currency: String = "EUR") -> JSONValue {
        .object(strings: [
            "currencyCode": .string(currency), "units": .string(String(milliunits / 1_000)),
            "nanos": .int((milliunits % 1_000) * 1_000_000),
        ])
    }

    var acknowledgement: JSONValue {
        .string(acknowledged ? "ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED" : "ACKNOWLEDGEMENT_STATE_PENDING")
    }

    /// `SubscriptionPurchaseV2`.
    var subscription: JSONValue {
        let d = Self.day
        var state = "SUBSCRIPTION_STATE_ACTIVE"
        var start = anchor - 5 * d
        var expiry = anchor + 25 * d
        var order: String? = orderID
        var autoRenew = true
        var phase = "basePrice"
        var offerID: String?
        var price: Int64 = 9_990
        var top: [String: JSONValue] = [:]
        var plan: [String: JSONValue] = [:]
        switch scenario {
        case .trial:
            (start, expiry, phase, offerID) = (anchor - d, anchor + 6 * d, "freeTrial", "free-week")
        case .intro:
            (phase, offerID) = ("introductoryPrice", "intro-half")
        case .canceled:
            (state, autoRenew) = ("SUBSCRIPTION_STATE_CANCELED", false)
            top["canceledStateContext"] = .object(strings: [
                "userInitiatedCancellation": .object(strings: ["cancelTime": Self.time(anchor - d)])
            ])
        case .expired:
            (state, autoRenew, start, expiry) = ("SUBSCRIPTION_STATE_EXPIRED", false, anchor - 40 * d, anchor - 10 * d)
            top["canceledStateContext"] = .object(strings: [
                "userInitiatedCancellation": .object(strings: ["cancelTime": Self.time(anchor - 15 * d)])
            ])
        case .gracePeriod:
            (state, start, expiry) = ("SUBSCRIPTION_STATE_IN_GRACE_PERIOD", anchor - 31 * d, anchor + 2 * d)
        case .accountHold:
            (state, start, expiry) = ("SUBSCRIPTION_STATE_ON_HOLD", anchor - 40 * d, anchor - 5 * d)
        case .paused:
            (state, start, expiry) = ("SUBSCRIPTION_STATE_PAUSED", anchor - 40 * d, anchor - 10 * d)
            top["pausedStateContext"] = .object(strings: ["autoResumeTime": Self.time(anchor + 20 * d)])
        case .pending:
            (state, order) = ("SUBSCRIPTION_STATE_PENDING", nil)
        case .pendingCanceled:
            (state, order, autoRenew) = ("SUBSCRIPTION_STATE_PENDING_PURCHASE_CANCELED", nil, false)
        case .replaced:
            (state, autoRenew, start, expiry) = ("SUBSCRIPTION_STATE_EXPIRED", false, anchor - 20 * d, anchor)
            top["canceledStateContext"] = .object(strings: ["replacementCancellation": .object([:])])
        case .upgraded:
            (start, expiry, price) = (anchor, anchor + 365 * d, 99_990)
            top["linkedPurchaseToken"] = .string(PlayScenario.replaced.token(tag: tag))
        case .installments:
            plan["installmentDetails"] = .object(strings: [
                "initialCommittedPaymentsCount": .int(12), "remainingCommittedPaymentsCount": .int(11),
            ])
        case .priceIncrease:
            plan["priceChangeDetails"] = .object(strings: [
                "newPrice": Self.money(12_990), "priceChangeMode": .string("PRICE_INCREASE"),
                "priceChangeState": .string("OUTSTANDING"), "expectedNewPriceChargeTime": Self.time(anchor + 25 * d),
            ])
        case .test:
            top["testPurchase"] = .object([:])
        case .renewing:
            let periods = max(0, (now - start) / (30 * d))
            expiry = start + (periods + 1) * 30 * d
            if periods > 0 { order = orderID + "..\(periods - 1)" }
        case .active, .lifetime, .coins, .productPending, .productCancelled:
            break
        }
        if let voidedAt {
            // Google revokes a voided subscription at once.
            (state, autoRenew, expiry) = ("SUBSCRIPTION_STATE_EXPIRED", false, min(expiry, voidedAt))
            top["canceledStateContext"] = .object(strings: ["developerInitiatedCancellation": .object([:])])
        }
        plan["autoRenewEnabled"] = .bool(autoRenew)
        plan["recurringPrice"] = Self.money(price)
        var item: [String: JSONValue] = [
            "productId": .string(scenario.productID), "autoRenewingPlan": .object(strings: plan),
            "offerDetails": .object(strings: ["basePlanId": .string(scenario.productID), "offerTags": .array([])]),
            "offerPhase": .object(strings: [phase: .object([:])]),
        ]
        if let offerID {
            item["offerDetails"] = .object(strings: ["basePlanId": .string(scenario.productID), "offerId": .string(offerID)])
        }
        if state != "SUBSCRIPTION_STATE_PENDING" && state != "SUBSCRIPTION_STATE_PENDING_PURCHASE_CANCELED" {
            item["expiryTime"] = Self.time(expiry)
        }
        if let order { item["latestSuccessfulOrderId"] = .string(order) }
        top["kind"] = .string("androidpublisher#subscriptionPurchaseV2")
        top["regionCode"] = .string("DE")
        top["subscriptionState"] = .string(state)
        if order != nil { top["startTime"] = Self.time(start) }
        if let order { top["latestOrderId"] = .string(order) }
        top["acknowledgementState"] = acknowledgement
        top["externalAccountIdentifiers"] = .object(strings: ["obfuscatedExternalAccountId": .string("acct-\(tag)")])
        top["lineItems"] = .array([.object(strings: item)])
        return .object(strings: top)
    }

    /// `ProductPurchaseV2`.
    func product(consumed: Bool) -> JSONValue {
        let state =
            switch scenario {
            case .productPending where paidAt == nil: "PENDING"
            case .productCancelled: "CANCELLED"
            default: voidedAt == nil ? "PURCHASED" : "CANCELLED"
            }
        var top: [String: JSONValue] = [
            "kind": .string("androidpublisher#productPurchaseV2"), "regionCode": .string("US"),
            "purchaseStateContext": .object(strings: ["purchaseState": .string(state)]),
            "acknowledgementState": acknowledgement, "obfuscatedExternalAccountId": .string("acct-\(tag)"),
            "productLineItem": .array([
                .object(strings: [
                    "productId": .string(scenario.productID),
                    "productOfferDetails": .object(strings: [
                        "quantity": .int(1), "refundableQuantity": .int(voidedAt == nil ? 1 : 0),
                        "consumptionState": .string(
                            consumed ? "CONSUMPTION_STATE_CONSUMED" : "CONSUMPTION_STATE_YET_TO_BE_CONSUMED"),
                        "purchaseOptionId": .string("buy"),
                    ]),
                ])
            ]),
        ]
        if state != "PENDING" {
            top["orderId"] = .string(orderID)
            top["purchaseCompletionTime"] = Self.time(paidAt ?? (anchor - 60_000))
        }
        return .object(strings: top)
    }
}
