import Entitlements
import Testing

@testable import Analytics

@Suite struct ExchangeRatesTests {
    static let history = """
        Date,USD,JPY,GBP,CYP,
        2026-01-06,1.2000,160.5,0.80000,N/A,
        2026-01-05,1.1000,159.25,0.85000,N/A,

        """

    @Test func readsTheHistoryFile() throws {
        let rows = try ECBReferenceRates.parse(Self.history)
        #expect(rows.count == 6)
        #expect(
            rows.contains(ExchangeRates.Row(day: CivilTime.days(year: 2026, month: 1, day: 6), currency: "GBP", perEuro: 800_000))
        )
        #expect(!rows.contains { $0.currency == "CYP" })
    }

    @Test func readsTheDailyFile() throws {
        let rows = try ECBReferenceRates.parse("Date, USD, JPY, \r\n20 November 2026, 1.0523, 162.85, \r\n")
        #expect(
            rows == [
                ExchangeRates.Row(day: CivilTime.days(year: 2026, month: 11, day: 20), currency: "USD", perEuro: 1_052_300),
                ExchangeRates.Row(day: CivilTime.days(year: 2026, month: 11, day: 20), currency: "JPY", perEuro: 162_850_000),
            ])
    }

    @Test func refusesWhatIsNotTheECBsFile() {
        for (text, line) in [
            ("", 1), ("Day,USD\n2026-01-01,1.1\n", 1), ("Date,usd\n", 1), ("Date,USD\n2026-02-30,1.1\n", 2),
            ("Date,USD\n2026-01-01,-1.1\n", 2), ("Date,USD\n2026-01-01,1.1234567\n", 2), ("Date,USD\n2026-01-01,0\n", 2),
        ] {
            #expect(throws: ECBReferenceRates.Malformed.self) { try ECBReferenceRates.parse(text) }
            #expect((try? ECBReferenceRates.parse(text)) == nil, "\(text) line \(line)")
        }
    }

    @Test func aDayWithoutPublicationTakesTheLatestWithinFourDays() throws {
        let rates = ExchangeRates(try ECBReferenceRates.parse(Self.history))
        let jan6 = CivilTime.days(year: 2026, month: 1, day: 6)
        #expect(rates.perEuro("USD", day: jan6) == 1_200_000)
        #expect(rates.perEuro("USD", day: jan6 + 4) == 1_200_000)
        #expect(rates.perEuro("USD", day: jan6 + 5) == nil)
        #expect(rates.perEuro("USD", day: jan6 - 2) == nil)
        #expect(rates.perEuro("EUR", day: 0) == 1_000_000)
        #expect(rates.perEuro("CHF", day: jan6) == nil)
    }

    @Test func convertsThroughTheEuroWithOneRounding() throws {
        let rates = ExchangeRates(try ECBReferenceRates.parse(Self.history))
        let jan6 = CivilTime.days(year: 2026, month: 1, day: 6)
        // 9.99 GBP → EUR 12.4875 → USD 14.985
        #expect(rates.convert(9990, from: "GBP", to: "USD", day: jan6) == 14_985)
        // 1,000 JPY → 6.2305… EUR → 7.4766… USD
        #expect(rates.convert(1_000_000, from: "JPY", to: "USD", day: jan6) == 7477)
        #expect(rates.convert(9990, from: "EUR", to: "USD", day: jan6) == 11_988)
        #expect(rates.convert(9990, from: "USD", to: "USD", day: 0) == 9990)
        #expect(rates.convert(9990, from: "CHF", to: "USD", day: jan6) == nil)
    }
}
