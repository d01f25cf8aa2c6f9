import Testing

@testable import Entitlements

@Suite("Catalog and calendar durations")
struct CatalogTests {
    @Test(arguments: [
        ("P1M", CalendarDuration(months: 1)), ("P1Y", CalendarDuration(years: 1)), ("P2W", CalendarDuration(days: 14)),
        ("P30D", CalendarDuration(days: 30)), ("P1Y6M", CalendarDuration(years: 1, months: 6)),
    ])
    func durationsParse(_ text: String, _ expected: CalendarDuration) {
        #expect(CalendarDuration(iso8601: text) == expected)
    }

    @Test(arguments: ["", "P", "1M", "PT1H", "P1M1Y", "P0D", "P-1D", "P1.5M", "P1MM"])
    func malformedDurationsAreRefused(_ text: String) {
        #expect(CalendarDuration(iso8601: text) == nil)
    }

    @Test func monthsMoveTheCalendarAndClampToTheMonthsEnd() {
        // 2024-01-31T10:00:00Z + 1 month = 2024-02-29T10:00:00Z (a leap year); + 1 year from Feb 29 = Feb 28.
        let jan31: Int64 = 1_706_695_200_000
        #expect(CivilTime.rfc3339(jan31) == "2024-01-31T10:00:00.000Z")
        #expect(CivilTime.rfc3339(CalendarDuration(months: 1).added(to: jan31)) == "2024-02-29T10:00:00.000Z")
        let feb29 = CalendarDuration(months: 1).added(to: jan31)
        #expect(CivilTime.rfc3339(CalendarDuration(years: 1).added(to: feb29)) == "2025-02-28T10:00:00.000Z")
        #expect(CivilTime.rfc3339(CalendarDuration(days: 30).added(to: jan31)) == "2024-03-01T10:00:00.000Z")
        #expect(CivilTime.rfc3339(CalendarDuration(months: 11).added(to: jan31)) == "2024-12-31T10:00:00.000Z")
    }

    @Test func civilTimeRoundTripsDays() {
        for days in stride(from: Int64(-800_000), through: 800_000, by: 997) {
            let (y, m, dd) = CivilTime.date(fromDays: days)
            #expect(CivilTime.days(year: y, month: m, day: dd) == days)
        }
        #expect(CivilTime.rfc3339(-1) == "1969-12-31T23:59:59.999Z")
    }

    @Test func undeclaredProductsAreJudgedByTheirExpiry() {
        let catalog = Catalog(["coins": .consumable])
        #expect(
            catalog.kind(of: Purchase(transactionID: "a", originalTransactionID: "a", productID: "x", expiresDate: 1))
                == .autoRenewable)
        #expect(catalog.kind(of: Purchase(transactionID: "a", originalTransactionID: "a", productID: "x")) == .nonConsumable)
        #expect(catalog.kind(of: Purchase(transactionID: "a", originalTransactionID: "a", productID: "coins")) == .consumable)
    }

    /// The longest passes a configuration can declare, stacked by many purchases, stay
    /// at or before 9999-12-31 instead of overflowing; product ids match as exact bytes.
    @Test func stackedLongPassesSaturateAndIdsMatchAsBytes() {
        let longest = CalendarDuration(iso8601: "P999999Y999999M999999W999999D")!
        #expect(longest.added(to: 0) == CivilTime.latest)
        #expect(longest.added(to: Int64.max) == CivilTime.latest)
        let catalog = Catalog(["pass": .nonRenewing(longest), "caf\u{00E9}": .consumable])
        let purchases = (0..<500).map {
            Purchase(transactionID: "t\($0)", originalTransactionID: "t\($0)", productID: "pass", purchaseDate: Int64($0))
        }
        let derived = Derivation.nonSubscriptions(Facts(purchases: purchases), catalog: catalog, now: 1)
        #expect(derived.allSatisfy { ($0.expiresAt ?? 0) <= CivilTime.latest } && derived.count == 500)
        #expect(
            catalog.kind(of: Purchase(transactionID: "a", originalTransactionID: "a", productID: "cafe\u{0301}"))
                == .nonConsumable)
        #expect(
            catalog.kind(of: Purchase(transactionID: "a", originalTransactionID: "a", productID: "caf\u{00E9}")) == .consumable)
    }
}
