import Identifiers
import Testing

@testable import Analytics

/// A kept group's two values, cut at its first separator: a storefront or product of any bytes
/// (a combining mark after the separator, the separator again) comes back byte for byte.
@Suite("Rollup rows")
struct RollupRowTests {
    @Test(arguments: [
        ("DEU", "monthly"), ("", "monthly"), ("DEU", ""), ("", ""), ("USA", "\u{301}x"), ("e\u{301}", "\u{1F}p"),
    ])
    func aKeptGroupCutsAtItsSeparatorsByte(country: String, product: String) {
        let group = ChartItem.keptGroup(country: country, product: product)
        #expect(Array(RollupSplit.country.value(inKept: group).utf8) == Array(country.utf8))
        #expect(Array(RollupSplit.product.value(inKept: group).utf8) == Array(product.utf8))
        #expect(RollupSplit.none.value(inKept: group).isEmpty)
    }

    /// A group without the separator (not one the rollups make) is a country alone.
    @Test func aGroupWithoutTheSeparatorIsACountry() {
        #expect(RollupSplit.country.value(inKept: "DEU") == "DEU")
        #expect(RollupSplit.product.value(inKept: "DEU") == "")
    }
}
