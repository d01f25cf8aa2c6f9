package import JSON

/// One entry of the Voided Purchases API (`purchases.voidedpurchases.list`,
/// https://developers.google.com/android-publisher/voided-purchases): an order Google took the
/// money back for (a refund, a chargeback, a revocation), with when.
package struct VoidedPurchase: Sendable, Equatable {
    package var purchaseToken: String
    package var orderID: String?
    package var voidedTime: Int64
    package var purchaseTime: Int64?
    /// 0 user, 1 developer, 2 Google.
    package var voidedSource: Int64?
    /// 0 other, 1 remorse, 2 not received, 3 defective, 4 accidental purchase, 5 fraud, 6 friendly fraud, 7 chargeback.
    package var voidedReason: Int64?

    package init(
        purchaseToken: String, orderID: String?, voidedTime: Int64, purchaseTime: Int64? = nil, voidedSource: Int64? = nil,
        voidedReason: Int64? = nil
    ) {
        self.purchaseToken = purchaseToken
        self.orderID = orderID
        self.voidedTime = voidedTime
        self.purchaseTime = purchaseTime
        self.voidedSource = voidedSource
        self.voidedReason = voidedReason
    }

    package init(_ value: JSONValue) throws(GooglePlayError) {
        guard let token = value["purchaseToken"]?.string else {
            throw .unexpectedAnswer("a voided purchase has no purchaseToken")
        }
        guard let voided = value["voidedTimeMillis"]?.int64 else {
            throw .unexpectedAnswer("a voided purchase has no voidedTimeMillis")
        }
        self.init(
            purchaseToken: token, orderID: value["orderId"]?.string, voidedTime: voided,
            purchaseTime: value["purchaseTimeMillis"]?.int64, voidedSource: value["voidedSource"]?.int64,
            voidedReason: value["voidedReason"]?.int64)
    }
}
