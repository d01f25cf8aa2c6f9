import Entitlements
import Identifiers

extension ChartDefinition {
    /// Revenue: each sale in the period it was made, its refund (whenever it came) booked back to
    /// it; gross, refunds, net (split into new and renewal revenue), tax, commission and proceeds
    /// in the answer's currency; and the sales not refunded in full (RevenueCat's transactions).
    static let revenue = ChartDefinition(
        measures: ["transactions", "gross", "refunds", "net", "new_revenue", "renewal_revenue", "tax", "commission", "proceeds"],
        money: ["gross", "refunds", "net", "new_revenue", "renewal_revenue", "tax", "commission", "proceeds"],
        followsSubscriptions: false,
        record: { $0.revenue() },
        close: {
            $0.zero([
                "transactions", "gross", "refunds", "net", "new_revenue", "renewal_revenue", "tax", "commission", "proceeds",
            ])
        })
}

/// How a ledger becomes the revenue chart's items.
extension ItemRecorder {
    /// Revenue in the period of the sale; a refund, whenever it came, is booked back to it. A
    /// sale counts as a transaction until it is refunded in full (a prorated refund leaves it
    /// revenue); its net is new revenue when it is its customer's first payment (among the sales
    /// the filters admit), renewal revenue otherwise (renewals, later purchases, offers).
    mutating func revenue() {
        var paid: Set<Identifier> = []
        for e in admitted {
            guard let at = e.purchase.purchaseDate else { continue }
            // Their first payment, priced or not (a sale left out is still the first).
            let first = e.purchase.isPayment && paid.insert(Identifier(e.appUserID)).inserted
            let (charge, notes) = charge(e)
            guard let c = charge else {
                if !notes.isEmpty { flow("", at: at, 0, e, notes: notes) }
                continue
            }
            let (gross, missing) = convert(c.gross, c)
            guard let gross, let refunds = convert(c.refunds, c).0, let proceeds = convert(c.proceeds, c).0 else {
                flow("", at: at, 0, e, notes: notes + missing)
                continue
            }
            let tax = c.tax.flatMap { convert($0, c).0 } ?? 0
            let net = gross - refunds
            func source() -> String {
                "price from \(c.price.source.rawValue), \(Money.text(c.price.milliunits)) \(c.price.currency)"
            }
            let refundedInFull = c.refunds == c.gross ? e.purchase.cancellationDate : nil
            flow("transactions", at: at, 1, e, detail: source(), valid: (.min, refundedInFull ?? .max))
            flow("gross", at: at, gross, e, money: true, detail: source(), notes: notes)
            flow("refunds", at: at, refunds, e, money: true, detail: c.refundKind)
            flow("net", at: at, net, e, money: true)
            flow(first ? "new_revenue" : "renewal_revenue", at: at, net, e, money: true, detail: first ? "first payment" : nil)
            flow("tax", at: at, tax, e, money: true, detail: c.tax == nil ? "no tax rate for the storefront" : nil)
            flow("commission", at: at, net - tax - proceeds, e, money: true, detail: "\(c.commissionPercent) %")
            flow("proceeds", at: at, proceeds, e, money: true, detail: "estimated")
        }
    }
}
