import Entitlements
import Identifiers
import Testing

@testable import Analytics

/// One transaction of a ledger, dates as (year, month, day) at 00:00 UTC.
func sale(
    _ id: String, user: String, original: String? = nil, product: String = "monthly", from: Int64, to: Int64?,
    price: Int64? = nil, currency: String = "USD", storefront: String = "USA", trial: Bool = false, family: Bool = false,
    refundedAt: Int64? = nil, revocationType: String? = nil, revocationPercentage: Int64? = nil, upgraded: Bool = false,
    offerType: Int64? = nil, offerDiscount: String? = nil, billingPlan: String? = nil, commitment: Commitment? = nil,
    app: String = "com.example.app", environment: StoreEnvironment = .production
) -> Ledger.Entry {
    Ledger.Entry(
        appUserID: user, bundleID: app,
        purchase: Purchase(
            transactionID: id, originalTransactionID: original ?? id, productID: product, purchaseDate: from, expiresDate: to,
            cancellationDate: refundedAt, isUpgraded: upgraded, ownershipType: family ? "FAMILY_SHARED" : "PURCHASED",
            environment: environment, subscriptionGroupID: "group",
            commerce: Commerce(
                price: price.map { Price(milliunits: $0, currency: currency, source: .store) }, storefront: storefront,
                offerType: trial ? 1 : offerType, offerDiscountType: trial ? "FREE_TRIAL" : offerDiscount,
                revocationType: revocationType, revocationPercentage: revocationPercentage, billingPlanType: billingPlan,
                commitment: commitment)))
}

@Suite struct ProceedsTests {
    @Test func aYearOfPaidServiceInTheGroupLowersTheCommission() {
        // Twelve monthly periods from 2025-01-01, then the thirteenth on 2026-01-01: 365 days paid.
        var entries: [Ledger.Entry] = []
        for m in Int64(1)...13 {
            let (y, month) = m == 13 ? (Int64(2026), Int64(1)) : (Int64(2025), m)
            let next = month == 12 ? at(y + 1, 1, 1) : (m == 13 ? at(2026, 2, 1) : at(y, month + 1, 1))
            entries.append(sale("t\(m)", user: "u", original: "o", from: at(y, month, 1), to: next, price: 10_000))
        }
        let commission = Commission(entries, smallBusinessApps: [])
        #expect(commission.percent(entries[11]) == 30)  // 2025-12-01: 334 days
        #expect(commission.percent(entries[12]) == 15)  // 2026-01-01: 365 days
        #expect(Commission(entries, smallBusinessApps: ["com.example.app"]).percent(entries[0]) == 15)
    }

    @Test func googlePlaysServiceFeeIsFifteenPercentOnSubscriptionsFromTheFirstDay() {
        var monthly = sale("GPA.1", user: "u", from: at(2026, 1, 1), to: at(2026, 2, 1), price: 9_990)
        var coins = sale("GPA.2", user: "u", product: "coins", from: at(2026, 1, 1), to: nil, price: 1_990)
        monthly.purchase.store = .playStore
        coins.purchase.store = .playStore
        let commission = Commission([monthly, coins], smallBusinessApps: [])
        #expect(commission.percent(monthly) == 15 && commission.percent(coins) == 30)
        #expect(Commission([coins], smallBusinessApps: ["com.example.app"]).percent(coins) == 15)
    }

    @Test func aLapseOfMoreThanSixtyDaysStartsTheCountAgain() {
        let year = sale("a", user: "u", original: "o", product: "annual", from: at(2025, 1, 1), to: at(2026, 1, 1), price: 50_000)
        let within = sale("b", user: "u", original: "o", from: at(2026, 3, 2), to: at(2026, 4, 2), price: 5_000)  // 60 days later
        let after = sale("c", user: "v", original: "p", from: at(2026, 3, 3), to: at(2026, 4, 3), price: 5_000)  // 61 days later
        let otherYear = sale(
            "d", user: "v", original: "p", product: "annual", from: at(2025, 1, 1), to: at(2026, 1, 1), price: 50_000)
        let commission = Commission([year, within, after, otherYear], smallBusinessApps: [])
        #expect(commission.percent(within) == 15)
        #expect(commission.percent(after) == 30)
        // A fully refunded year gives no paid days.
        let refunded = sale(
            "e", user: "w", original: "q", product: "annual", from: at(2025, 1, 1), to: at(2026, 1, 1), price: 50_000,
            refundedAt: at(2025, 12, 31))
        let next = sale("f", user: "w", original: "q", from: at(2026, 1, 1), to: at(2026, 2, 1), price: 5_000)
        #expect(Commission([refunded, next], smallBusinessApps: []).percent(next) == 30)
    }

    @Test func proceedsComeAfterRefundTaxAndCommission() {
        // 9.99 EUR in Germany (19 % VAT), half refunded: 4.995 net, 4.197 before tax, 70 % of it.
        let e = sale(
            "b", user: "u", from: at(2026, 1, 5), to: at(2026, 2, 5), price: 9990, currency: "EUR", storefront: "DEU",
            refundedAt: at(2026, 1, 20), revocationType: "REFUND_PRORATED", revocationPercentage: 50_000)
        let c = Charge(entry: e, price: e.purchase.commerce.price!, commissionPercent: 30, taxPPM: 190_000)
        #expect((c.gross, c.refunds, c.net, c.tax, c.proceeds) == (9990, 4995, 4995, 798, 2938))
        #expect(c.refundKind == "prorated_refund")
        // Revoked from Family Sharing: nothing refunded.
        let family = sale(
            "f", user: "u", from: at(2026, 1, 5), to: at(2026, 2, 5), price: 9990, refundedAt: at(2026, 1, 6),
            revocationType: "FAMILY_REVOKE")
        #expect(Charge(entry: family, price: family.purchase.commerce.price!, commissionPercent: 30, taxPPM: nil).refunds == 0)
    }
}
