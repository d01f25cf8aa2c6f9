import Entitlements
import Identifiers
import Testing

@testable import Analytics

/// Every figure here was computed by hand; the comments show the arithmetic.
@Suite struct ChartEngineTests {
    static let rates = ExchangeRates([
        // EUR 1 = USD 1.2 = GBP 0.8 on 2026-01-05 only.
        ExchangeRates.Row(day: CivilTime.days(year: 2026, month: 1, day: 5), currency: "USD", perEuro: 1_200_000),
        ExchangeRates.Row(day: CivilTime.days(year: 2026, month: 1, day: 5), currency: "GBP", perEuro: 800_000),
    ])
    static let settings = AnalyticsSettings(taxRates: ["DEU": 190_000])

    static func months(_ chart: Chart, now: Int64, filters: ChartFilters = ChartFilters(), currency: String? = nil) -> ChartQuery
    {
        ChartQuery(
            chart: chart, from: at(2026, 1, 1), to: at(2026, 4, 1), resolution: .month, currency: currency, filters: filters,
            now: now)
    }

    func answer(_ entries: [Ledger.Entry], _ q: ChartQuery, renewals: [Identifier: Ledger.RenewalState] = [:]) throws
        -> ChartAnswer
    {
        try ChartEngine(ledger: Ledger(entries: entries, renewals: renewals), rates: Self.rates, settings: Self.settings).answer(
            q)
    }

    /// A: 10.00 USD monthly; B: 9.99 EUR in Germany, half refunded; C: 5.00 GBP on a day with no
    /// rate; D: 120.00 USD a year; A's family member's copy; and a sandbox purchase.
    static let revenueLedger = [
        sale("a1", user: "alice", original: "a", from: at(2026, 1, 5), to: at(2026, 2, 5), price: 10_000),
        sale("a2", user: "alice", original: "a", from: at(2026, 2, 5), to: at(2026, 3, 5), price: 10_000),
        sale(
            "b1", user: "bob", original: "b", from: at(2026, 1, 5), to: at(2026, 2, 5), price: 9990, currency: "EUR",
            storefront: "DEU", refundedAt: at(2026, 1, 20), revocationType: "REFUND_PRORATED", revocationPercentage: 50_000),
        sale(
            "c1", user: "carol", original: "c", from: at(2026, 1, 20), to: at(2026, 2, 20), price: 5000, currency: "GBP",
            storefront: "GBR"),
        sale("d1", user: "dave", original: "d", product: "annual", from: at(2026, 1, 10), to: at(2027, 1, 10), price: 120_000),
        sale("a1f", user: "amy", original: "af", from: at(2026, 1, 5), to: at(2026, 2, 5), price: 10_000, family: true),
        sale("s1", user: "sam", original: "s", from: at(2026, 1, 5), to: at(2026, 2, 5), price: 10_000, environment: .sandbox),
    ]

    @Test func revenueBooksRefundsBackAndReportsAMissingRate() throws {
        let a = try answer(Self.revenueLedger, Self.months(.revenue, now: at(2026, 3, 1)))
        #expect(a.currency == "USD")
        // January: A 10.000; B 9.990 EUR × 1.2 = 11.988, half back 5.994, tax 0.798 EUR × 1.2 = 0.958 (0.9576),
        // proceeds 70 % of 4.197 EUR = 2.938 EUR × 1.2 = 3.526 (3.5256); D 120.000, proceeds 84.000.
        #expect(a.values[0]["transactions"] == .count(3))
        #expect(a.values[0]["gross"] == .money(141_988))
        #expect(a.values[0]["refunds"] == .money(5994))
        #expect(a.values[0]["net"] == .money(135_994))
        #expect(a.values[0]["tax"] == .money(958))
        #expect(a.values[0]["proceeds"] == .money(7000 + 3526 + 84_000))
        #expect(a.values[0]["commission"] == .money(3000 + (5994 - 958 - 3526) + 36_000))
        // February: A's renewal only; March has not begun (now is March 1st 00:00, which it is).
        #expect(a.values[1]["gross"] == .money(10_000) && a.values[1]["proceeds"] == .money(7000))
        // Net is new revenue (each customer's first payment) and renewal revenue: January's three
        // first payments (A, B after her refund, D), February's renewal.
        #expect(a.values[0]["new_revenue"] == .money(135_994) && a.values[0]["renewal_revenue"] == .money(0))
        #expect(a.values[1]["new_revenue"] == .money(0) && a.values[1]["renewal_revenue"] == .money(10_000))
        #expect(a.values[2]["gross"] == .money(0))
        // Converting GBP to USD on January 20th needs both rates; neither was published within 4 days.
        #expect(
            a.missingRates == [
                MissingRate(currency: "GBP", day: "2026-01-20", from: "GBP", to: "USD", transactions: 1),
                MissingRate(currency: "USD", day: "2026-01-20", from: "GBP", to: "USD", transactions: 1),
            ])
        #expect(a.untaxedStorefronts == ["GBR", "USA"])
        // The figure itself says it is short: January's amounts left Carol's sale out.
        #expect(a.leftOut == [1, 0, 0])
    }

    @Test func revenueInAnotherCurrencyAndFilters() throws {
        let eur = try answer(Self.revenueLedger, Self.months(.revenue, now: at(2026, 3, 1), currency: "EUR"))
        // January in EUR: A 10 USD / 1.2 = 8.333 (8.3333); B 9.990. D's January 10th, Carol's
        // January 20th and A's February renewal have no rate: left out and reported.
        #expect(eur.values[0]["gross"] == .money(8333 + 9990))
        #expect(
            eur.missingRates.map { "\($0.currency) \($0.day) \($0.from)→\($0.to)" } == [
                "GBP 2026-01-20 GBP→EUR", "USD 2026-01-10 USD→EUR", "USD 2026-02-05 USD→EUR",
            ])
        let germany = try answer(
            Self.revenueLedger, Self.months(.revenue, now: at(2026, 3, 1), filters: ChartFilters(storefront: "DEU")))
        #expect(germany.values[0]["gross"] == .money(11_988) && germany.missingRates.isEmpty)
        let sandbox = try answer(
            Self.revenueLedger, Self.months(.revenue, now: at(2026, 3, 1), filters: ChartFilters(environment: "sandbox")))
        #expect(sandbox.values[0]["gross"] == .money(10_000))
        let annual = try answer(
            Self.revenueLedger, Self.months(.revenue, now: at(2026, 3, 1), filters: ChartFilters(product: "annual")))
        #expect(annual.values[0]["transactions"] == .count(1))
    }

    @Test func mrrNormalisesToAMonthAndLeavesOutTrialsAndFamilySharing() throws {
        var ledger = Self.revenueLedger
        // An offer code's discounted month (2.99) and a monthly plan with a 12-month commitment
        // (9.99 a month; the commitment's 119.88 is not the month's price).
        ledger.append(
            sale(
                "o1", user: "olga", original: "o", from: at(2026, 1, 25), to: at(2026, 2, 25), price: 2990,
                offerType: 3, offerDiscount: "PAY_AS_YOU_GO"))
        ledger.append(
            sale(
                "m1", user: "mia", original: "m", from: at(2026, 1, 25), to: at(2026, 2, 25), price: 9990,
                billingPlan: "MONTHLY", commitment: Commitment(billingPeriodNumber: 1, totalBillingPeriods: 12, price: 119_880)))
        ledger.append(sale("t1", user: "tom", original: "t", from: at(2026, 1, 25), to: at(2026, 2, 1), trial: true))
        let a = try answer(ledger, Self.months(.mrr, now: at(2026, 2, 28, 23)))
        // End of January: A 10.000, C (no rate: counted, no amount), D 120/12 = 10.000, O 2.990, M 9.990.
        // B was refunded on the 20th; the family copy and Tom's trial are not paid.
        #expect(a.values[0]["subscriptions"] == .count(5))
        #expect(a.values[0]["mrr"] == .money(10_000 + 10_000 + 2990 + 9990))
        #expect(a.values[0]["arr"] == .money(12 * (10_000 + 10_000 + 2990 + 9990)))
        // February so far (the 28th, 23:00): A (to March 5th), D.
        #expect(a.values[1]["mrr"] == .money(20_000))
        // March has not begun.
        #expect(a.values[2]["mrr"] == nil)
        #expect(a.missingRates.map(\.currency) == ["GBP", "USD"])
    }

    @Test func anUpgradeMidPeriodRefundsTheUnusedShare() throws {
        // Basic 6.00 from January 1st; upgraded on the 16th to Premium at 12.00.
        let ledger = [
            sale(
                "u1", user: "uma", original: "u", product: "basic", from: at(2026, 1, 1), to: at(2026, 2, 1), price: 6000,
                refundedAt: at(2026, 1, 16), upgraded: true),
            sale("u2", user: "uma", original: "u", product: "premium", from: at(2026, 1, 16), to: at(2026, 2, 16), price: 12_000),
        ]
        let revenue = try answer(ledger, Self.months(.revenue, now: at(2026, 3, 1)))
        // 6000 × 16 unused days / 31 = 3096.77 → 3097.
        #expect(revenue.values[0]["refunds"] == .money(3097))
        #expect(revenue.values[0]["net"] == .money(18_000 - 3097))
        let mrr = try answer(ledger, Self.months(.mrr, now: at(2026, 3, 1)))
        #expect(mrr.values[0]["subscriptions"] == .count(1) && mrr.values[0]["mrr"] == .money(12_000))
        let refunds = try answer(ledger, Self.months(.refundRate, now: at(2026, 3, 1)))
        #expect(refunds.values[0]["refunded_transactions"] == .count(0))
    }

    /// P renews once and stops; Q's renewal fails and recovers from billing retry on February
    /// 10th; R is in a grace period until February 21st; S lapses and comes back on March 5th.
    static let churnLedger = [
        sale("p1", user: "pia", original: "p", from: at(2026, 1, 1), to: at(2026, 2, 1), price: 5000),
        sale("p2", user: "pia", original: "p", from: at(2026, 2, 1), to: at(2026, 3, 1), price: 5000),
        sale("q1", user: "quinn", original: "q", from: at(2026, 1, 1), to: at(2026, 2, 1), price: 5000),
        sale("q2", user: "quinn", original: "q", from: at(2026, 2, 10), to: at(2026, 3, 10), price: 5000),
        sale("r1", user: "rita", original: "r", from: at(2026, 1, 15), to: at(2026, 2, 15), price: 5000),
        sale("s1", user: "sol", original: "s", from: at(2026, 1, 1), to: at(2026, 2, 1), price: 5000),
        sale("s2", user: "sol", original: "s", from: at(2026, 3, 5), to: at(2026, 4, 5), price: 5000),
    ]
    static let churnRenewals: [Identifier: Ledger.RenewalState] = [
        "r": Ledger.RenewalState(autoRenewStatus: true, isInBillingRetryPeriod: true, gracePeriodExpiresDate: at(2026, 2, 21))
    ]

    @Test func churnCountsResubscriptionsBack() throws {
        let a = try answer(Self.churnLedger, Self.months(.churn, now: at(2026, 3, 15)), renewals: Self.churnRenewals)
        // January: P, Q, S active at the start; nobody's access ended.
        #expect(a.values[0]["actives_at_start"] == .count(3) && a.values[0]["churned"] == .count(0))
        #expect(a.values[0]["churn_rate"] == .ratio(0, 3))
        // February: P and R at the start; Q (1st), S (1st) and R (21st, after grace) ended; Q came back.
        #expect(a.values[1]["actives_at_start"] == .count(2))
        #expect(a.values[1]["churned"] == .count(3) && a.values[1]["resubscribed"] == .count(1))
        #expect(a.values[1]["churn_rate"] == .ratio(2, 2))
        // March to the 15th: Q at the start; P (1st) and Q (10th) ended; S came back on the 5th.
        #expect(a.values[2]["actives_at_start"] == .count(1))
        #expect(a.values[2]["churned"] == .count(2) && a.values[2]["resubscribed"] == .count(1))
    }

    @Test func activesCountGracePeriodsAndTrials() throws {
        var ledger = Self.churnLedger
        ledger.append(sale("t1", user: "tom", original: "t", from: at(2026, 3, 10), to: at(2026, 3, 17), trial: true))
        let a = try answer(ledger, Self.months(.actives, now: at(2026, 2, 18)), renewals: Self.churnRenewals)
        // End of January: P, Q, R (S and Q ended on February 1st 00:00, after January's last instant).
        #expect(a.values[0]["subscriptions"] == .count(4))
        // February so far (the 18th): P, Q (recovered), R in its grace period.
        #expect(a.values[1]["subscriptions"] == .count(3))
        let march = try answer(ledger, Self.months(.actives, now: at(2026, 3, 15)), renewals: Self.churnRenewals)
        // March 15th: S; Tom's trial.
        #expect(march.values[2]["subscriptions"] == .count(1) && march.values[2]["trials"] == .count(1))
    }

    @Test func trialConversionByFirstSeen() throws {
        let ledger = [
            // Erin converts; Frank converts and is refunded; Hank turns renewal off; Gina's is running.
            sale("e0", user: "erin", original: "e", from: at(2026, 1, 1), to: at(2026, 1, 8), trial: true),
            sale("e1", user: "erin", original: "e", from: at(2026, 1, 8), to: at(2026, 2, 8), price: 5000),
            sale("f0", user: "frank", original: "f", from: at(2026, 1, 2), to: at(2026, 1, 9), trial: true),
            sale(
                "f1", user: "frank", original: "f", from: at(2026, 1, 9), to: at(2026, 2, 9), price: 5000,
                refundedAt: at(2026, 1, 10)),
            sale("h0", user: "hank", original: "h", from: at(2026, 1, 3), to: at(2026, 1, 10), trial: true),
            sale("g0", user: "gina", original: "g", from: at(2026, 3, 28), to: at(2026, 4, 4), trial: true),
        ]
        let renewals: [Identifier: Ledger.RenewalState] = [
            "h": Ledger.RenewalState(autoRenewStatus: false), "g": Ledger.RenewalState(autoRenewStatus: true),
        ]
        let a = try answer(ledger, Self.months(.trialConversion, now: at(2026, 4, 1)), renewals: renewals)
        #expect(a.values[0]["trials"] == .count(3))
        #expect(a.values[0]["converted"] == .count(1) && a.values[0]["abandoned"] == .count(2))
        #expect(a.values[0]["pending"] == .count(0) && a.values[0]["conversion_rate"] == .ratio(1, 3))
        #expect(a.values[2]["trials"] == .count(1) && a.values[2]["pending"] == .count(1))
        let trials = try answer(ledger, Self.months(.trials, now: at(2026, 4, 1)))
        #expect(trials.values.map { $0["new_trials"] } == [.count(3), .count(0), .count(1)])
        // Cohorts of customers by first seen (RevenueCat's): Hank, seen in December, is December's.
        let seen = try ChartEngine(
            ledger: Ledger(
                entries: ledger, renewals: renewals, customers: ["hank": Ledger.Customer(firstSeen: at(2025, 12, 20))]),
            rates: Self.rates, settings: Self.settings
        ).answer(Self.months(.trialConversion, now: at(2026, 4, 1)))
        #expect(seen.values[0]["trials"] == .count(2) && seen.values[0]["abandoned"] == .count(1))
    }

    /// RevenueCat's transactions: a sale refunded in full stops counting from its refund; a prorated
    /// refund leaves a sale that brought money.
    @Test func aSaleRefundedInFullIsNoTransaction() throws {
        let q = { (now: Int64) in Self.months(.revenue, now: now) }
        let engine = CustomersTests.engine
        // January: Erin's 5.00, Frank's first (refunded in full on the 10th) and second payment.
        #expect(try engine.answer(q(at(2026, 1, 9, 12))).values[0]["transactions"] == .count(2))
        let april = try engine.answer(q(at(2026, 4, 1)))
        #expect(april.values[0]["transactions"] == .count(2) && april.values[0]["gross"] == .money(15_000))
        let drill = try engine.drill(q(at(2026, 4, 1)), period: "2026-01-01", measure: "transactions")
        #expect(drill.contributions.map(\.transactionID) == ["e1", "f2"])
        // Frank's first payment is his new revenue, though refunded: 0; his second is renewal revenue.
        #expect(april.values[0]["new_revenue"] == .money(5000) && april.values[0]["renewal_revenue"] == .money(5000))
        // The prorated refund of Bob's sale leaves it a transaction.
        #expect(try answer(Self.revenueLedger, q(at(2026, 3, 1))).values[0]["transactions"] == .count(3))
    }

    @Test func refundRateLeavesOutTrialsAndFamilySharing() throws {
        let a = try answer(Self.revenueLedger, Self.months(.refundRate, now: at(2026, 3, 1)))
        // January: A, B, C, D paid (C has no rate, but was paid); B refunded.
        #expect(a.values[0]["paid_transactions"] == .count(4))
        #expect(a.values[0]["refund_rate"] == .ratio(1, 4))
    }

    @Test func cohortsRetainAndRealiseValue() throws {
        let a = try answer(Self.churnLedger, Self.months(.cohorts, now: at(2026, 3, 15)), renewals: Self.churnRenewals)
        // January's cohort: all four. Paying at the end of January: P, Q, R, (S ended Feb 1st 00:00) S → 4;
        // end of February: P (to March 1st 00:00), Q; March 15th: S.
        #expect(a.values[0]["customers"] == .count(4))
        #expect(a.values[0]["paying_0"] == .count(4))
        #expect(a.values[0]["paying_1"] == .count(2) && a.values[0]["retention_1"] == .ratio(2, 4))
        #expect(a.values[0]["paying_2"] == .count(1))
        // Seven payments of 5.00 by March 15th; LTV 35 / 4 = 8.75.
        #expect(a.values[0]["revenue"] == .money(35_000) && a.values[0]["ltv"] == .money(8750))
        #expect(a.values[1]["customers"] == nil)
    }

    @Test func everyFigureIsTheSumOfItsDrillDown() throws {
        let engine = ChartEngine(ledger: Ledger(entries: Self.revenueLedger), rates: Self.rates, settings: Self.settings)
        let q = Self.months(.revenue, now: at(2026, 3, 1))
        let answer = try engine.answer(q)
        for measure in Chart.revenue.measures {
            let drill = try engine.drill(q, period: "2026-01-01", measure: measure)
            let zero: Measure = measure == "transactions" ? .count(0) : .money(0)
            let sum = drill.contributions.map(\.value).reduce(zero, +)
            #expect(sum == answer.values[0][measure], "\(measure)")
        }
        let gross = try engine.drill(q, period: "2026-01-01", measure: "gross")
        #expect(gross.contributions.map(\.transactionID) == ["a1", "b1", "d1"])
        #expect(gross.contributions[1].value == .money(11_988) && gross.contributions[1].appUserID == "bob")
        #expect(throws: ChartError.derivedMeasure("ltv", parts: ["revenue", "customers"])) {
            try engine.drill(Self.months(.cohorts, now: at(2026, 3, 1)), period: "2026-01-01", measure: "ltv")
        }
        #expect(throws: ChartError.unknownPeriod("2026-01-02")) { try engine.drill(q, period: "2026-01-02", measure: "gross") }
        #expect(throws: ChartError.unknownMeasure("mrr")) { try engine.drill(q, period: "2026-01-01", measure: "mrr") }
        // A cohort's measure is `paying_N` as the chart writes it, nothing else starting so: what a
        // drill echoes (into a CSV's file name, a header) is one of the chart's own names.
        let cohorts = Self.months(.cohorts, now: at(2026, 3, 1))
        #expect(throws: Never.self) { try engine.drill(cohorts, period: "2026-01-01", measure: "paying_1") }
        for hostile in ["paying_1\r\nSet-Cookie: a=b", "paying_01", "paying_", "paying_-1", "paying_1.csv", "paying_99999999"] {
            #expect(throws: ChartError.unknownMeasure(hostile)) {
                try engine.drill(cohorts, period: "2026-01-01", measure: hostile)
            }
        }
    }

    /// A drill lists what makes its figure: the refunds of a month are its refunded sales, not
    /// every sale at zero.
    @Test func aDrillListsOnlyWhatMakesItsFigure() throws {
        let engine = ChartEngine(ledger: Ledger(entries: Self.revenueLedger), rates: Self.rates, settings: Self.settings)
        let q = Self.months(.revenue, now: at(2026, 3, 1))
        for measure in [
            "transactions", "gross", "refunds", "net", "new_revenue", "renewal_revenue", "tax", "commission", "proceeds",
        ] {
            let drill = try engine.drill(q, period: "2026-01-01", measure: measure)
            #expect(!drill.contributions.contains { $0.value == .money(0) }, "\(measure)")
        }
        let refunds = try engine.drill(q, period: "2026-01-01", measure: "refunds")
        #expect(refunds.contributions.map(\.transactionID) == ["b1"])
    }
}
