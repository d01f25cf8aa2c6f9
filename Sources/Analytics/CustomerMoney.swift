package import Entitlements

/// What one customer paid: each of their transactions with its price, refund, tax, Apple's
/// commission and the proceeds (estimated), in the transaction's own currency, and the totals
/// per currency. The revenue chart's rules exactly (``Charge``, ``Commission``), so a customer's
/// lines are their contributions to it. Pure.
package struct CustomerMoney: Sendable, Equatable {
    package struct Line: Sendable, Equatable {
        package var transactionID: String
        package var originalTransactionID: String
        package var productID: String
        package var purchaseDate: Int64?
        /// Its price and who stated it (the price table's included); nil when nothing priced it.
        package var price: Price?
        /// Why it brings nothing: `free_trial`, `family_shared`, `no_price`; nil for a sale.
        package var unpaid: String?
        package var gross: Int64 = 0
        package var refunds: Int64 = 0
        /// `refund`, `prorated_refund` or `upgrade_proration` when part of it went back.
        package var refundKind: String?
        /// The VAT/GST its price included; nil without a rate for its storefront.
        package var tax: Int64?
        /// 15 or 30 for a sale.
        package var commissionPercent: Int64?
        package var commission: Int64 = 0
        package var proceeds: Int64 = 0

        package var net: Int64 { gross - refunds }
    }

    /// The sales of one currency added up (amounts in its milliunits).
    package struct Total: Sendable, Equatable {
        package var currency: String
        package var transactions = 0
        package var gross: Int64 = 0
        package var refunds: Int64 = 0
        package var tax: Int64 = 0
        package var commission: Int64 = 0
        package var proceeds: Int64 = 0

        package var net: Int64 { gross - refunds }
    }

    /// Newest purchase first.
    package var lines: [Line]
    /// By currency code.
    package var totals: [Total]

    /// `entries` are one customer's (the commission counts their paid days in each group).
    package init(_ entries: [Ledger.Entry], settings: AnalyticsSettings) {
        let commission = Commission(entries, smallBusinessApps: settings.smallBusinessApps)
        var byCurrency: [String: Total] = [:]
        let newestFirst = entries.sorted {
            ($0.purchase.purchaseDate ?? .min, $0.purchase.transactionID) > (
                $1.purchase.purchaseDate ?? .min, $1.purchase.transactionID
            )
        }
        lines = newestFirst.map { e in
            let p = e.purchase
            var line = Line(
                transactionID: p.transactionID, originalTransactionID: p.originalTransactionID, productID: p.productID,
                purchaseDate: p.purchaseDate, price: settings.price(of: p))
            if p.isFamilyShared {
                line.unpaid = "family_shared"
            } else if p.isFreeTrial {
                line.unpaid = "free_trial"
            } else if let price = line.price, price.milliunits > 0 {
                let tax = p.commerce.storefront.flatMap { settings.taxRates[$0] }
                let c = Charge(entry: e, price: price, commissionPercent: commission.percent(e), taxPPM: tax)
                (line.gross, line.refunds, line.refundKind, line.tax) = (c.gross, c.refunds, c.refundKind, c.tax)
                (line.commissionPercent, line.proceeds) = (c.commissionPercent, c.proceeds)
                line.commission = c.net - (c.tax ?? 0) - c.proceeds
                var total = byCurrency[price.currency] ?? Total(currency: price.currency)
                total.transactions += 1
                total.gross += c.gross
                total.refunds += c.refunds
                total.tax += c.tax ?? 0
                total.commission += line.commission
                total.proceeds += c.proceeds
                byCurrency[price.currency] = total
            } else {
                line.unpaid = line.price == nil ? "no_price" : "free"
            }
            return line
        }
        totals = byCurrency.keys.sorted().map { byCurrency[$0]! }
    }
}
