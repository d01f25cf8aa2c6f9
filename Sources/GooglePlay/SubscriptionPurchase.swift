import Entitlements
package import JSON

/// Google Play's answer about one subscription purchase token: `purchases.subscriptionsv2.get`'s
/// `SubscriptionPurchaseV2`
/// (https://developers.google.com/android-publisher/api-ref/rest/v3/purchases.subscriptionsv2).
/// Read tolerantly like Apple's answers: members Google adds are ignored, a missing optional
/// member is nil, and only what receiptd cannot do without is required. `raw` keeps the resource
/// as it came, for `receiptd rederive`.
package struct SubscriptionPurchase: Sendable, Equatable {
    /// `subscriptionState`'s values.
    package enum State: String, Sendable, CaseIterable {
        case unspecified = "SUBSCRIPTION_STATE_UNSPECIFIED"
        case pending = "SUBSCRIPTION_STATE_PENDING"
        case active = "SUBSCRIPTION_STATE_ACTIVE"
        case paused = "SUBSCRIPTION_STATE_PAUSED"
        case inGracePeriod = "SUBSCRIPTION_STATE_IN_GRACE_PERIOD"
        case onHold = "SUBSCRIPTION_STATE_ON_HOLD"
        case canceled = "SUBSCRIPTION_STATE_CANCELED"
        case expired = "SUBSCRIPTION_STATE_EXPIRED"
        case pendingPurchaseCanceled = "SUBSCRIPTION_STATE_PENDING_PURCHASE_CANCELED"
    }

    /// Who ended the subscription's renewals (`canceledStateContext`).
    package enum Cancellation: String, Sendable, Equatable {
        /// The customer canceled (`userInitiatedCancellation`).
        case user
        /// Google canceled it, e.g. after the account hold ended unpaid (`systemInitiatedCancellation`).
        case system
        /// The developer canceled it (`developerInitiatedCancellation`).
        case developer
        /// It was replaced by another subscription: an upgrade, downgrade or crossgrade (`replacementCancellation`).
        case replacement
    }

    /// Which phase of its offer the current period is in (`offerPhase`).
    package enum OfferPhase: String, Sendable, Equatable {
        case freeTrial = "free_trial"
        case introductoryPrice = "introductory_price"
        case basePrice = "base_price"
        case prorationPeriod = "proration_period"
    }

    /// One item of the subscription (a base subscription, or an add-on).
    package struct LineItem: Sendable, Equatable {
        package var productID: String
        /// When the item's access ends unless it renews; during a grace period, the grace period's end.
        package var expiryTime: Int64?
        /// The order that paid for the current period.
        package var latestSuccessfulOrderID: String?
        /// Nil for a prepaid plan, which never renews by itself.
        package var autoRenewEnabled: Bool?
        package var isPrepaid: Bool
        /// What the next renewal charges (`autoRenewingPlan.recurringPrice`); nil when absent or not exact.
        package var recurringPrice: GoogleMoney?
        /// A price change on its way (`autoRenewingPlan.priceChangeDetails`).
        package var priceChange: PriceChange?
        /// An installment plan's commitment (`autoRenewingPlan.installmentDetails`).
        package var installments: Installments?
        package var basePlanID: String?
        package var offerID: String?
        package var offerPhase: OfferPhase?
        /// The product a deferred replacement turns this item into at its next renewal.
        package var deferredReplacementProductID: String?
    }

    package struct PriceChange: Sendable, Equatable {
        package var newPrice: GoogleMoney?
        /// `PRICE_DECREASE`, `PRICE_INCREASE`, `OPT_OUT_PRICE_INCREASE`.
        package var mode: String?
        /// `OUTSTANDING`, `CONFIRMED`, `APPLIED`.
        package var state: String?
        package var expectedNewPriceChargeTime: Int64?
    }

    package struct Installments: Sendable, Equatable {
        package var initialCommittedPayments: Int64?
        package var remainingCommittedPayments: Int64?
        package var pendingCancellation: Bool
    }

    package var state: State
    /// When the subscription was bought (`startTime`); absent while its payment is pending.
    package var startTime: Int64?
    /// ISO 3166-1 alpha-2, where the customer was billed.
    package var regionCode: String?
    /// The token this purchase replaced (an upgrade, downgrade or resubscription).
    package var linkedPurchaseToken: String?
    /// A license tester's purchase: nothing was charged (receiptd's `sandbox`).
    package var isTest: Bool
    package var isAcknowledged: Bool
    /// What the app set with `setObfuscatedAccountId` at purchase: its user's id, as it chose to send it.
    package var obfuscatedAccountID: String?
    package var obfuscatedProfileID: String?
    /// A paused subscription resumes then.
    package var autoResumeTime: Int64?
    package var cancellation: Cancellation?
    /// When the customer canceled, when they did.
    package var cancelTime: Int64?
    package var lineItems: [LineItem]
    package var raw: JSONValue

    package static let kind = "androidpublisher#subscriptionPurchaseV2"

    /// Reads the resource. Throws ``GooglePlayError/unexpectedAnswer(_:)`` naming what is wrong
    /// when it is not a subscription purchase: another `kind`, no state, no line item with a product.
    package init(_ value: JSONValue) throws(GooglePlayError) {
        guard case .object = value else { throw .unexpectedAnswer("the subscription purchase is not a JSON object") }
        if let kind = value["kind"]?.string, kind != Self.kind {
            throw .unexpectedAnswer("the answer's kind is \(kind.prefix(64)), not a subscription purchase")
        }
        guard let stateName = value["subscriptionState"]?.string else {
            throw .unexpectedAnswer("the subscription purchase has no subscriptionState")
        }
        state = State(rawValue: stateName) ?? .unspecified
        startTime = try Self.time(value["startTime"], "startTime")
        regionCode = value["regionCode"]?.string
        linkedPurchaseToken = value["linkedPurchaseToken"]?.string
        isTest = value["testPurchase"] != nil && value["testPurchase"] != .null
        isAcknowledged = value["acknowledgementState"]?.string == "ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED"
        let identifiers = value["externalAccountIdentifiers"]
        obfuscatedAccountID = identifiers?["obfuscatedExternalAccountId"]?.string
        obfuscatedProfileID = identifiers?["obfuscatedExternalProfileId"]?.string
        autoResumeTime = try Self.time(value["pausedStateContext"]?["autoResumeTime"], "autoResumeTime")
        let canceled = value["canceledStateContext"]
        cancellation =
            if canceled?["userInitiatedCancellation"] != nil { .user } else if canceled?["systemInitiatedCancellation"] != nil {
                .system
            } else if canceled?["developerInitiatedCancellation"] != nil {
                .developer
            } else if canceled?["replacementCancellation"] != nil { .replacement } else { nil }
        cancelTime = try Self.time(canceled?["userInitiatedCancellation"]?["cancelTime"], "cancelTime")
        var items: [LineItem] = []
        for item in value["lineItems"]?.array ?? [] {
            guard let productID = item["productId"]?.string else {
                throw .unexpectedAnswer("a line item of the subscription purchase has no productId")
            }
            let plan = item["autoRenewingPlan"]
            let change = plan?["priceChangeDetails"]
            let installments = plan?["installmentDetails"]
            let phase = item["offerPhase"]
            items.append(
                LineItem(
                    productID: productID, expiryTime: try Self.time(item["expiryTime"], "expiryTime"),
                    latestSuccessfulOrderID: item["latestSuccessfulOrderId"]?.string,
                    autoRenewEnabled: plan.map { $0["autoRenewEnabled"]?.bool ?? false },
                    isPrepaid: item["prepaidPlan"] != nil,
                    recurringPrice: plan?["recurringPrice"].flatMap(GoogleMoney.init),
                    priceChange: try change.map { c throws(GooglePlayError) in
                        PriceChange(
                            newPrice: c["newPrice"].flatMap(GoogleMoney.init), mode: c["priceChangeMode"]?.string,
                            state: c["priceChangeState"]?.string,
                            expectedNewPriceChargeTime: try Self.time(
                                c["expectedNewPriceChargeTime"], "expectedNewPriceChargeTime"))
                    },
                    installments: installments.map {
                        Installments(
                            initialCommittedPayments: $0["initialCommittedPaymentsCount"]?.int64,
                            remainingCommittedPayments: $0["remainingCommittedPaymentsCount"]?.int64,
                            pendingCancellation: $0["pendingCancellation"] != nil)
                    },
                    basePlanID: item["offerDetails"]?["basePlanId"]?.string, offerID: item["offerDetails"]?["offerId"]?.string,
                    offerPhase: phase?["freeTrial"] != nil
                        ? .freeTrial
                        : phase?["introductoryPrice"] != nil
                            ? .introductoryPrice
                            : phase?["prorationPeriod"] != nil
                                ? .prorationPeriod
                                : phase?["basePrice"] != nil ? .basePrice : nil,
                    deferredReplacementProductID: item["deferredItemReplacement"]?["productId"]?.string))
        }
        guard !items.isEmpty || state == .pending || state == .pendingPurchaseCanceled else {
            throw .unexpectedAnswer("the subscription purchase has no line items")
        }
        lineItems = items
        raw = value
    }

    /// An RFC 3339 member as epoch milliseconds; nil when absent; refused when present but not a time.
    static func time(_ value: JSONValue?, _ name: String) throws(GooglePlayError) -> Int64? {
        guard let value, value != .null else { return nil }
        guard let text = value.string, let ms = CivilTime.instant(rfc3339: text) else {
            throw .unexpectedAnswer("\(name) is not an RFC 3339 time")
        }
        return ms
    }
}
