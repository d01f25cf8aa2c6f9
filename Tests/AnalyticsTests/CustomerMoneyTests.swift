import Entitlements
import Identifiers
import Testing

@testable import Analytics

@Suite struct CustomerMoneyTests {
    @Test func eachTransactionWithItsRefundTaxCommissionAndProceedsAndTotalsPerCurrency() {
        let settings = AnalyticsSettings(
            taxRates: ["DEU": 190_000],
            priceTable: ["lifetime": ["*": .init(milliunits: 29_990, currency: "USD")]])
        let entries = [
            // A free trial, then 9.99 EUR in Germany, half refunded: 4.995 net, 0.798 tax, 2.938 proceeds.
            sale(
                "t0", user: "u", original: "o", from: at(2026, 1, 1), to: at(2026, 1, 8), currency: "EUR", storefront: "DEU",
                trial: true),
            sale(
                "t1", user: "u", original: "o", from: at(2026, 1, 8), to: at(2026, 2, 8), price: 9990, currency: "EUR",
                storefront: "DEU", refundedAt: at(2026, 1, 20), revocationType: "REFUND_PRORATED",
                revocationPercentage: 50_000),
            // The next month whole: 8.395 before tax (9.99 ÷ 1.19 = 8.3949…), so 1.595 tax; 70 % of 8.395
            // is 5.8765, half-even 5.876.
            sale(
                "t2", user: "u", original: "o", from: at(2026, 2, 8), to: at(2026, 3, 8), price: 9990, currency: "EUR",
                storefront: "DEU"),
            // A lifetime purchase priced by the table (USA: no tax rate), and one nothing prices.
            sale("l1", user: "u", product: "lifetime", from: at(2026, 3, 1), to: nil),
            sale("x1", user: "u", product: "coins", from: at(2026, 3, 2), to: nil),
        ]
        let money = CustomerMoney(entries, settings: settings)
        #expect(money.lines.map(\.transactionID) == ["x1", "l1", "t2", "t1", "t0"])
        let byID = Dictionary(uniqueKeysWithValues: money.lines.map { ($0.transactionID, $0) })
        #expect(byID["t0"]?.unpaid == "free_trial" && byID["t0"]?.gross == 0)
        #expect(byID["x1"]?.unpaid == "no_price" && byID["x1"]?.price == nil)
        let t1 = byID["t1"]!
        #expect((t1.gross, t1.refunds, t1.net, t1.tax, t1.commissionPercent, t1.proceeds) == (9990, 4995, 4995, 798, 30, 2938))
        #expect(t1.refundKind == "prorated_refund" && t1.commission == 4995 - 798 - 2938)
        let t2 = byID["t2"]!
        #expect((t2.tax, t2.proceeds, t2.commission) == (1595, 5876, 9990 - 1595 - 5876))
        let l1 = byID["l1"]!
        #expect(l1.price == Price(milliunits: 29_990, currency: "USD", source: .priceTable))
        #expect((l1.tax, l1.proceeds) == (nil, 20_993))  // 70 % of 29.99, half-even
        #expect(money.totals.map(\.currency) == ["EUR", "USD"])
        let eur = money.totals[0]
        #expect(
            (eur.transactions, eur.gross, eur.refunds, eur.net, eur.tax, eur.proceeds) == (2, 19_980, 4995, 14_985, 2393, 8814))
        #expect(eur.commission == t1.commission + t2.commission)
        #expect(money.totals[1].proceeds == 20_993)
    }
}
