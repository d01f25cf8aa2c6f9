import Testing

@testable import Analytics

@Suite struct MoneyTests {
    @Test func scalingRoundsOnceHalfToEven() {
        #expect(Money.scale(10, by: 1, over: 4) == 2)  // 2.5 → 2
        #expect(Money.scale(14, by: 1, over: 4) == 4)  // 3.5 → 4
        #expect(Money.scale(-14, by: 1, over: 4) == -4)
        #expect(Money.scale(6000, by: 16, over: 31) == 3097)  // 3096.77…
        #expect(Money.scale(4995, by: 1_000_000, over: 1_190_000) == 4197)  // 4197.47…
        #expect(Money.scale(Int64.max, by: 3, over: 3) == Int64.max)
    }

    @Test func textHasThreePlaces() {
        #expect(Money.text(9990) == "9.990")
        #expect(Money.text(-5) == "-0.005")
        #expect(Money.text(0) == "0.000")
        #expect(Money.text(120_000) == "120.000")
        #expect(Money.text(-1_000) == "-1.000")
        #expect(Money.text(.max) == "9223372036854775.807")
        #expect(Money.text(.min) == "-9223372036854775.808")
    }

    @Test func decimalsAreReadExactly() {
        #expect(Money.decimal("1.0823", places: 6) == 1_082_300)
        #expect(Money.decimal("158", places: 6) == 158_000_000)
        #expect(Money.decimal("0.851380", places: 6) == 851_380)
        for bad in ["", ".5", "1.", "1.2345678", "-1", "1e3", "1,5", "١"] { #expect(Money.decimal(bad, places: 6) == nil) }
    }

    @Test func ratiosHaveFourPlaces() {
        #expect(Money.ratio(1, 3) == "0.3333")
        #expect(Money.ratio(2, 3) == "0.6667")
        #expect(Money.ratio(-1, 2) == "-0.5000")
        #expect(Money.ratio(3, 0) == nil)
        #expect(Money.ratio(7, 7) == "1.0000")
        #expect(Money.ratio(1, -8) == "-0.1250")
        #expect(Money.ratio(123_456, 1) == "123456.0000")
    }
}
