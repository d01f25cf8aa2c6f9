import Entitlements
import Identifiers
import Testing

@testable import Analytics

/// The charts of customers by first seen, by hand.
@Suite struct CustomersTests {
    /// Ann: seen January 2nd, bought nothing. Erin: seen January 1st, a trial that day, paying
    /// 5.00 from January 8th, renewed February 8th. Frank: no post before his trial on January
    /// 2nd; paid January 9th, refunded the 10th; paid again January 20th. Gus: seen January 15th,
    /// coins for 2.00 on February 20th. Hana: a sandbox tester seen in February. Ivan: seen March 3rd.
    static let ledger = Ledger(
        entries: [
            sale("e0", user: "erin", original: "e", from: at(2026, 1, 1), to: at(2026, 1, 8), trial: true),
            sale("e1", user: "erin", original: "e", from: at(2026, 1, 8), to: at(2026, 2, 8), price: 5000),
            sale("e2", user: "erin", original: "e", from: at(2026, 2, 8), to: at(2026, 3, 8), price: 5000),
            sale("f0", user: "frank", original: "f", from: at(2026, 1, 2), to: at(2026, 1, 9), trial: true),
            sale(
                "f1", user: "frank", original: "f", from: at(2026, 1, 9), to: at(2026, 2, 9), price: 5000,
                refundedAt: at(2026, 1, 10), revocationType: "REFUND_FULL"),
            sale("f2", user: "frank", original: "f", from: at(2026, 1, 20), to: at(2026, 2, 20), price: 5000),
            sale("g1", user: "gus", product: "coins", from: at(2026, 2, 20), to: nil, price: 2000),
        ],
        customers: [
            "ann": Ledger.Customer(firstSeen: at(2026, 1, 2, 10)),
            "erin": Ledger.Customer(firstSeen: at(2026, 1, 1)),
            "gus": Ledger.Customer(firstSeen: at(2026, 1, 15)),
            "hana": Ledger.Customer(firstSeen: at(2026, 2, 3), bundleID: "com.example.app", environments: ["sandbox"]),
            "ivan": Ledger.Customer(firstSeen: at(2026, 3, 3)),
        ])

    static let engine = ChartEngine(ledger: ledger, rates: ChartEngineTests.rates, settings: ChartEngineTests.settings)

    static func months(_ chart: Chart, now: Int64 = at(2026, 4, 1), window: ChartWindow? = nil) -> ChartQuery {
        ChartQuery(chart: chart, from: at(2026, 1, 1), to: at(2026, 4, 1), resolution: .month, now: now, window: window)
    }

    @Test func newCustomersAreEveryoneFirstSeen() throws {
        let a = try Self.engine.answer(Self.months(.newCustomers))
        // January: Ann, Erin, Frank (at his trial), Gus; February: Hana is sandbox's; March: Ivan.
        #expect(a.values.map { $0["new_customers"] } == [.count(4), .count(0), .count(1)])
        let sandbox = try Self.engine.answer(
            ChartQuery(
                chart: .newCustomers, from: at(2026, 1, 1), to: at(2026, 4, 1), resolution: .month,
                filters: ChartFilters(environment: "sandbox"), now: at(2026, 4, 1)))
        #expect(sandbox.values.map { $0["new_customers"] } == [.count(0), .count(1), .count(0)])
        let drill = try Self.engine.drill(Self.months(.newCustomers), period: "2026-01-01", measure: "new_customers")
        #expect(drill.contributions.map(\.appUserID) == ["ann", "erin", "frank", "gus"])
        #expect(drill.contributions.allSatisfy { $0.originalTransactionID.isEmpty && $0.detail == "first seen" })
    }

    @Test func initialConversionWithinItsWindow() throws {
        let a = try Self.engine.answer(Self.months(.initialConversion))
        // Seven days: Erin's and Frank's trials (day 0); Gus's coins came on day 36.
        #expect(a.window == .days7)
        #expect(a.values[0]["converted_customers"] == .count(2) && a.values[0]["initial_conversion_rate"] == .ratio(2, 4))
        let unbounded = try Self.engine.answer(Self.months(.initialConversion, window: .unbounded))
        #expect(unbounded.values[0]["converted_customers"] == .count(3))
        let ninety = try Self.engine.answer(Self.months(.initialConversion, window: .days90))
        #expect(ninety.values[0]["converted_customers"] == .count(3))
    }

    @Test func conversionToPayingLosesARefundedPaymentUntilTheNextInTheWindow() throws {
        // Seven days: Erin paid on day 7 (January 8th, seen the 1st). Frank paid on day 7 too, but
        // was refunded; his next payment (day 18) is outside the window.
        let now = try Self.engine.answer(Self.months(.conversionToPaying))
        #expect(now.values[0]["new_paying_customers"] == .count(1) && now.values[0]["paying_conversion_rate"] == .ratio(1, 4))
        // Before the refund, on January 9th at noon, Frank counted.
        let before = try Self.engine.answer(Self.months(.conversionToPaying, now: at(2026, 1, 9, 12)))
        #expect(before.values[0]["new_paying_customers"] == .count(2))
        // Thirty days: Frank's January 20th payment counts from his refund on.
        let thirty = try Self.engine.answer(Self.months(.conversionToPaying, window: .days30))
        #expect(thirty.values[0]["new_paying_customers"] == .count(2))
        let drill = try Self.engine.drill(
            Self.months(.conversionToPaying, window: .days30), period: "2026-01-01", measure: "new_paying_customers")
        #expect(drill.contributions.map(\.transactionID) == ["e1", "f2"])
        #expect(throws: ChartError.derivedMeasure("paying_conversion_rate", parts: ["new_paying_customers", "new_customers"])) {
            try Self.engine.drill(Self.months(.conversionToPaying), period: "2026-01-01", measure: "paying_conversion_rate")
        }
    }

    @Test func realisedLTVPerCustomerAndPerPayingCustomer() throws {
        // Thirty days: Erin 5.00 (her February renewal is day 38), Frank 0 (refunded) + 5.00,
        // Gus's coins on day 36 are out. 10.000 over 4 customers = 2.500; over the 2 who paid, 5.000.
        let perCustomer = try Self.engine.answer(Self.months(.ltvPerCustomer))
        #expect(perCustomer.window == .days30)
        #expect(perCustomer.values[0]["revenue"] == .money(10_000) && perCustomer.values[0]["ltv_per_customer"] == .money(2500))
        let perPaying = try Self.engine.answer(Self.months(.ltvPerPayingCustomer))
        #expect(perPaying.values[0]["new_paying_customers"] == .count(2))
        #expect(perPaying.values[0]["ltv_per_paying_customer"] == .money(5000))
        // Unbounded: 10.00 + 5.00 + 2.00 = 17.000 over 4 = 4.250.
        let all = try Self.engine.answer(Self.months(.ltvPerCustomer, window: .unbounded))
        #expect(all.values[0]["revenue"] == .money(17_000) && all.values[0]["ltv_per_customer"] == .money(4250))
        // March's cohort (Ivan) brought nothing yet: 0 per customer.
        #expect(all.values[2]["ltv_per_customer"] == .money(0))
    }

    @Test func aWindowIsWholeUTCDaysAfterTheDayFirstSeen() {
        let seen = at(2026, 1, 1, 23)
        #expect(ChartWindow.days7.admits(at(2026, 1, 8, 23) + 3_599_999, firstSeen: seen))
        #expect(!ChartWindow.days7.admits(at(2026, 1, 9), firstSeen: seen))
        #expect(ChartWindow.unbounded.admits(at(2030, 1, 1), firstSeen: seen))
        #expect(ChartWindow.days30.end(firstSeen: seen) == at(2026, 2, 1))
    }
}
