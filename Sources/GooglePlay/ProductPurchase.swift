import Entitlements
package import JSON

/// Google Play's answer about one one-time product purchase token:
/// `purchases.productsv2.getproductpurchasev2`'s `ProductPurchaseV2`
/// (https://developers.google.com/android-publisher/api-ref/rest/v3/purchases.productsv2). Read
/// tolerantly, `raw` kept for `receiptd rederive`.
package struct ProductPurchase: Sendable, Equatable {
    /// `purchaseStateContext.purchaseState`.
    package enum State: String, Sendable, CaseIterable {
        case unspecified = "PURCHASE_STATE_UNSPECIFIED"
        case purchased = "PURCHASED"
        case cancelled = "CANCELLED"
        case pending = "PENDING"
    }

    package struct LineItem: Sendable, Equatable {
        package var productID: String
        package var quantity: Int64?
        /// Not yet refunded of `quantity`.
        package var refundableQuantity: Int64?
        /// Whether the app has consumed it (`CONSUMPTION_STATE_CONSUMED`).
        package var isConsumed: Bool
        package var offerID: String?
        package var purchaseOptionID: String?
    }

    package var state: State
    /// Absent while the payment is pending, and for purchases without an order (some test purchases).
    package var orderID: String?
    /// When the purchase became PURCHASED.
    package var completionTime: Int64?
    package var regionCode: String?
    package var isTest: Bool
    package var isAcknowledged: Bool
    package var obfuscatedAccountID: String?
    package var obfuscatedProfileID: String?
    package var lineItems: [LineItem]
    package var raw: JSONValue

    package static let kind = "androidpublisher#productPurchaseV2"

    package init(_ value: JSONValue) throws(GooglePlayError) {
        guard case .object = value else { throw .unexpectedAnswer("the product purchase is not a JSON object") }
        if let kind = value["kind"]?.string, kind != Self.kind {
            throw .unexpectedAnswer("the answer's kind is \(kind.prefix(64)), not a product purchase")
        }
        state = value["purchaseStateContext"]?["purchaseState"]?.string.flatMap(State.init(rawValue:)) ?? .unspecified
        orderID = value["orderId"]?.string
        completionTime = try SubscriptionPurchase.time(value["purchaseCompletionTime"], "purchaseCompletionTime")
        regionCode = value["regionCode"]?.string
        isTest = value["testPurchaseContext"] != nil && value["testPurchaseContext"] != .null
        isAcknowledged = value["acknowledgementState"]?.string == "ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED"
        obfuscatedAccountID = value["obfuscatedExternalAccountId"]?.string
        obfuscatedProfileID = value["obfuscatedExternalProfileId"]?.string
        var items: [LineItem] = []
        for item in value["productLineItem"]?.array ?? [] {
            guard let productID = item["productId"]?.string else {
                throw .unexpectedAnswer("a line item of the product purchase has no productId")
            }
            let offer = item["productOfferDetails"]
            items.append(
                LineItem(
                    productID: productID, quantity: offer?["quantity"]?.int64,
                    refundableQuantity: offer?["refundableQuantity"]?.int64,
                    isConsumed: offer?["consumptionState"]?.string == "CONSUMPTION_STATE_CONSUMED",
                    offerID: offer?["offerId"]?.string, purchaseOptionID: offer?["purchaseOptionId"]?.string))
        }
        guard !items.isEmpty else { throw .unexpectedAnswer("the product purchase has no line items") }
        lineItems = items
        raw = value
    }
}
