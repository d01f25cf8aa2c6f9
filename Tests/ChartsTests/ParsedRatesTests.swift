import Analytics
import Testing

@testable import Charts

@Suite("Parsed rates: read again only when their revision moves")
struct ParsedRatesTests {
    @Test func ratesAreReadOncePerRevision() {
        let parsed = ParsedRates()
        var reads = 0
        func rates(_ revision: Int64, _ perEuro: Int64) -> Int64? {
            parsed.rates(revision: revision) {
                reads += 1
                return ExchangeRates([.init(day: 20_486, currency: "USD", perEuro: perEuro)])
            }.perEuro("USD", day: 20_486)
        }
        #expect(rates(0, 1_082_300) == 1_082_300)
        #expect(rates(0, 1_100_000) == 1_082_300)  // the same revision: not read again
        #expect(reads == 1)
        #expect(rates(1, 1_100_000) == 1_100_000)
        #expect(rates(1, 1_200_000) == 1_100_000)
        #expect(reads == 2)
        #expect(rates(0, 1_300_000) == 1_300_000)  // any other revision, even an earlier one: read
        #expect(reads == 3)
    }
}
