import Testing

@testable import Entitlements

@Suite("Facts")
struct FactsTests {
    /// Rows stored before dates were checked on entry: every date is pinned into the range, so an
    /// expiry of `Int64.max` reads as the range's end, which is what it said.
    @Test func clampingPinsEveryDateIntoTheRange() {
        let range: ClosedRange<Int64> = 0...253_402_300_799_999
        let facts = Facts(
            purchases: [
                Purchase(
                    transactionID: "t", originalTransactionID: "o", productID: "p", purchaseDate: Int64.min,
                    originalPurchaseDate: 5, expiresDate: Int64.max, cancellationDate: nil)
            ],
            renewals: [
                RenewalObservation(
                    observedAt: Int64.max, renewal: Renewal(originalTransactionID: "o", gracePeriodExpiresDate: Int64.min))
            ],
            transfers: [Transfer(originalTransactionID: "o", from: nil, to: "u", at: -1)]
        ).clamped(to: range)
        #expect(facts.purchases[0].purchaseDate == 0 && facts.purchases[0].expiresDate == range.upperBound)
        #expect(facts.purchases[0].originalPurchaseDate == 5 && facts.purchases[0].cancellationDate == nil)
        #expect(facts.renewals[0].observedAt == range.upperBound && facts.renewals[0].renewal.gracePeriodExpiresDate == 0)
        #expect(facts.transfers[0].at == 0)
    }
}
