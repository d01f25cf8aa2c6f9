/// What a store says about a transaction's money and terms: the price and who stated it, the
/// storefront, the offer, a refund's kind and share, a commitment plan's terms. Access never
/// depends on it: Derivation reads a refund's kind and share (``Refund``) and a commitment's terms
/// to explain them; Analytics reads all of it. Amounts are integer milliunits of `currency` (Apple's
/// unit: 9.99 is 9990), never binary floating point.
package struct Commerce: Sendable, Equatable {
    package var price: Price?
    /// Apple's three-letter storefront (country or region), e.g. `USA`.
    package var storefront: String?
    /// 1 introductory, 2 promotional, 3 offer code, 4 win-back.
    package var offerType: Int64?
    /// `FREE_TRIAL`, `PAY_AS_YOU_GO`, `PAY_UP_FRONT`, `ONE_TIME`.
    package var offerDiscountType: String?
    /// ISO 8601 duration of the offer, e.g. `P1M`.
    package var offerPeriod: String?
    /// `PURCHASE` or `RENEWAL`.
    package var transactionReason: String?
    /// `REFUND_FULL`, `REFUND_PRORATED` or `FAMILY_REVOKE`.
    package var revocationType: String?
    /// The share refunded, in milliunits of a whole: 50000 is 50 %.
    package var revocationPercentage: Int64?
    /// `MONTHLY` for a monthly plan with a 12-month commitment; nil for an ordinary subscription.
    package var billingPlanType: String?
    package var commitment: Commitment?

    package init(
        price: Price? = nil, storefront: String? = nil, offerType: Int64? = nil, offerDiscountType: String? = nil,
        offerPeriod: String? = nil, transactionReason: String? = nil, revocationType: String? = nil,
        revocationPercentage: Int64? = nil, billingPlanType: String? = nil, commitment: Commitment? = nil
    ) {
        self.price = price
        self.storefront = storefront
        self.offerType = offerType
        self.offerDiscountType = offerDiscountType
        self.offerPeriod = offerPeriod
        self.transactionReason = transactionReason
        self.revocationType = revocationType
        self.revocationPercentage = revocationPercentage
        self.billingPlanType = billingPlanType
        self.commitment = commitment
    }

    package var isFreeTrial: Bool { offerDiscountType == "FREE_TRIAL" }

    /// Whether a store stated these terms: its signed data always names the storefront, and
    /// verifyReceipt states none (what Apple's history taught about such a transaction stays).
    package var statesTerms: Bool { storefront != nil }
}

/// An amount a customer was charged, with who said so.
package struct Price: Sendable, Equatable {
    /// Thousandths of the currency's unit: 9.99 USD is 9990.
    package var milliunits: Int64
    /// ISO 4217, e.g. `USD`.
    package var currency: String
    package var source: PriceSource

    package init(milliunits: Int64, currency: String, source: PriceSource) {
        self.milliunits = milliunits
        self.currency = currency
        self.source = source
    }

    /// An ISO 4217 code's shape: three capital letters.
    package static func isCurrencyCode(_ code: String) -> Bool {
        code.utf8.count == 3 && code.utf8.allSatisfy { $0 >= 0x41 && $0 <= 0x5A }
    }
}

/// Where a price came from, best first: a store's signed data, the store's transaction history
/// asked later (`receiptd backfill-prices`), the app's own word when it posted the receipt, the
/// operator's price table.
package enum PriceSource: String, Sendable, Equatable, CaseIterable {
    case store
    case storeHistory = "store_history"
    case client
    case priceTable = "price_table"

    /// Whether a price from here replaces one from `other`.
    package func outranks(_ other: PriceSource) -> Bool {
        Self.allCases.firstIndex(of: self)! < Self.allCases.firstIndex(of: other)!
    }
}

/// The terms of a monthly plan with a 12-month commitment (App Store, 2026).
package struct Commitment: Sendable, Equatable {
    /// This transaction's month within the commitment, from 1.
    package var billingPeriodNumber: Int64?
    package var totalBillingPeriods: Int64?
    /// The whole commitment's price, in milliunits of the transaction's currency.
    package var price: Int64?
    package var expiresDate: Int64?

    package init(
        billingPeriodNumber: Int64? = nil, totalBillingPeriods: Int64? = nil, price: Int64? = nil, expiresDate: Int64? = nil
    ) {
        self.billingPeriodNumber = billingPeriodNumber
        self.totalBillingPeriods = totalBillingPeriods
        self.price = price
        self.expiresDate = expiresDate
    }
}
