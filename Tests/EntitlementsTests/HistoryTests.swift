import Testing

@testable import Entitlements

@Suite("History")
struct HistoryTests {
    /// A chain with what a view hides until it happens: refunds dated later than the period, an
    /// upgrade, a period without a purchase date, a tie on the date.
    static let chains: [[Purchase]] = [
        [
            period("1", from: 0, to: 30), period("2", from: 30, to: 60, cancelled: 45),
            period("3", product: "yearly", from: 40, to: 400, upgraded: true),
            period("4", product: "pro", from: 41, to: 71), period("5", product: "pro", from: 41, to: 72, cancelled: 80),
            period("6", product: "pro", from: 71, to: 101, cancelled: 500),
        ],
        [
            Purchase(transactionID: "n", originalTransactionID: "o1", productID: "monthly"),
            period("1", from: 1, to: 31, upgraded: true), period("2", product: "yearly", from: 20, to: 385),
        ],
        // Before 1970 and without a date: the chronological order is not the order of purchase
        // dates, so every view is built anew.
        [
            Purchase(transactionID: "n", originalTransactionID: "o1", productID: "monthly"),
            Purchase(
                transactionID: "old", originalTransactionID: "o1", productID: "monthly", purchaseDate: -5 * day,
                expiresDate: 25 * day, cancellationDate: 10 * day),
            period("1", from: 0, to: 30),
        ],
    ]

    @Test(arguments: chains)
    func viewsKeptUpToDateAreTheViewsBuiltAnew(chain: [Purchase]) {
        let ordered = chain.sorted(by: Purchase.chronological)
        var moments = Set<Int64>([.min, -10 * day, 0, d(1000)])
        for p in ordered {
            for date in [p.purchaseDate, p.expiresDate, p.cancellationDate] {
                if let date { moments.formUnion([date - 1, date, date + 1]) }
            }
        }
        var views = History.Views(ordered)
        for t in moments.sorted() {
            #expect(views.at(t) == History.view(ordered, at: t), "at \(t)")
        }
    }
}
