import Analytics
import Clocks
import Entitlements
import Foundation
import Logging
import ReceiptTesting
import Storage
import Testing

@testable import ReceiptCore

private let day: Int64 = 86_400_000

/// The charts through storage: a business with every hard case (prorated and full refunds,
/// upgrades, gaps and resubscriptions, grace periods, family sharing, trials, offer codes, a
/// commitment plan, four currencies and a day without a rate) saved with ReceiptStore on each
/// dialect, then read by ReadChart, answers exactly what the engine answers from the facts as
/// they were saved. The figures themselves are proven by hand in AnalyticsTests.
@Suite("Charts through storage")
struct ReadChartTests {
    static let origin = CivilTime.days(year: 2026, month: 1, day: 1) * day
    static let now = origin + 200 * day

    /// Thirty subscribers' purchases and renewal infos, from `seed`.
    static func business(seed: UInt64) -> (VerifiedFacts, [String: String]) {
        var rng = SeededGenerator(seed: seed)
        var purchases: [Stated<Purchase>] = []
        var renewals: [Stated<Renewal>] = []
        var owners: [String: String] = [:]
        let storefronts = [("USA", "USD", Int64(9990)), ("DEU", "EUR", 8990), ("GBR", "GBP", 7990), ("JPN", "JPY", 1_500_000)]
        for user in 0..<30 {
            let original = "o\(user)"
            owners[original] = "u\(user)"
            let (storefront, currency, price) = storefronts.randomElement(using: &rng)!
            let product = Bool.random(using: &rng) ? "monthly" : "annual"
            var t = origin + Int64.random(in: 0..<(60 * day), using: &rng)
            for n in 0..<Int.random(in: 1...7, using: &rng) {
                let trial = n == 0 && Int.random(in: 0..<3, using: &rng) == 0
                let length = (trial ? 7 : product == "monthly" ? 30 : 365) * day
                var commerce = Commerce(
                    price: Price(milliunits: trial ? 0 : price, currency: currency, source: .store), storefront: storefront,
                    transactionReason: n == 0 ? "PURCHASE" : "RENEWAL")
                if trial { (commerce.offerType, commerce.offerDiscountType) = (1, "FREE_TRIAL") }
                if user % 7 == 3 && n == 1 { (commerce.offerType, commerce.offerDiscountType) = (3, "PAY_AS_YOU_GO") }
                if user % 11 == 5 {
                    commerce.billingPlanType = "MONTHLY"
                    commerce.commitment = Commitment(
                        billingPeriodNumber: Int64(n + 1), totalBillingPeriods: 12, price: price * 12)
                }
                var cancelled: Int64?
                var upgraded = false
                switch Int.random(in: 0..<10, using: &rng) {
                case 0:
                    cancelled = t + 3 * day
                    (commerce.revocationType, commerce.revocationPercentage) = ("REFUND_PRORATED", 40_000)
                case 1:
                    cancelled = t + 2 * day
                    commerce.revocationType = "REFUND_FULL"
                case 2 where n > 0:
                    cancelled = t + 10 * day
                    upgraded = true
                default: break
                }
                purchases.append(
                    Stated(
                        Purchase(
                            transactionID: "\(original)-\(n)", originalTransactionID: original, productID: product,
                            purchaseDate: t, originalPurchaseDate: t, expiresDate: t + length, cancellationDate: cancelled,
                            isTrialPeriod: trial, isUpgraded: upgraded,
                            ownershipType: user % 13 == 4 ? "FAMILY_SHARED" : "PURCHASED", environment: "production",
                            subscriptionGroupID: "g", commerce: commerce),
                        bundleID: "com.x", rawJSON: #"{"n":\#(n)}"#))
                // On time, after a gap (a resubscription), or early.
                t += length + [0, 0, 0, 40 * day, -day].randomElement(using: &rng)!
            }
            let retrying = Int.random(in: 0..<4, using: &rng) == 0
            renewals.append(
                Stated(
                    Renewal(
                        originalTransactionID: original, productID: product, autoRenewProductID: product,
                        autoRenewStatus: Bool.random(using: &rng), gracePeriodExpiresDate: retrying ? t + 6 * day : nil,
                        isInBillingRetryPeriod: retrying, environment: "production"),
                    rawJSON: "{}"))
        }
        return (VerifiedFacts(environment: "production", purchases: purchases, renewals: renewals, statedAt: 1), owners)
    }

    static let rates: [AnalyticsStore.RateRow] = (0..<200).filter { !(100..<120).contains($0) }.flatMap {
        d -> [AnalyticsStore.RateRow] in
        let (y, m, dd) = CivilTime.date(fromDays: origin / day + Int64(d))
        let label = PeriodGrid.label(y, m, dd)
        return [
            .init(day: label, currency: "USD", perEuro: "1.0823"), .init(day: label, currency: "GBP", perEuro: "0.8421"),
            .init(day: label, currency: "JPY", perEuro: "162.37"),
        ]
    }

    @Test(arguments: await testDialects())
    func everyChartThroughStorageIsTheEnginesAnswer(dialect: Database.Dialect) async throws {
        let settings = AnalyticsSettings(
            reportingCurrency: "EUR", taxRates: ["DEU": 190_000, "GBR": 200_000],
            priceTable: ["monthly": ["*": .init(milliunits: 4990, currency: "USD")]])
        try await withScratchDirectory("charts") { dir in
            let queue: DatabaseQueue
            switch dialect {
            case .sqlite:
                let db = try Database(path: dir + "/db.sqlite")
                _ = try Migrator(migrations: try Migration.load(from: migrationsDirectory)).migrate(db)
                queue = try DatabaseQueue(path: dir + "/db.sqlite")
            case .postgresql:
                queue = try DatabaseQueue(postgresURL: try await PostgresTestServer.freshDatabase(migrated: true))
            }
            let (facts, owners) = Self.business(seed: 39)
            try await queue.write { db in
                let store = ReceiptStore(db)
                for (original, user) in owners.sorted(by: { $0.key < $1.key }) {
                    var mine = facts
                    mine.purchases = facts.purchases.filter { $0.fact.originalTransactionID == original }
                    mine.renewals = facts.renewals.filter { $0.fact.originalTransactionID == original }
                    _ = try store.save(mine, for: user, now: 1)
                }
                _ = try AnalyticsStore(db).importRates(Self.rates)
            }
            // What the engine sees without storage: the same facts, held by the same users.
            let ledger = Ledger(
                entries: facts.purchases.map {
                    Ledger.Entry(appUserID: owners[$0.fact.originalTransactionID]!, bundleID: "com.x", purchase: $0.fact)
                },
                renewals: Dictionary(
                    uniqueKeysWithValues: facts.renewals.map {
                        (
                            $0.fact.originalTransactionID,
                            Ledger.RenewalState(
                                autoRenewStatus: $0.fact.autoRenewStatus, isInBillingRetryPeriod: $0.fact.isInBillingRetryPeriod,
                                gracePeriodExpiresDate: $0.fact.gracePeriodExpiresDate)
                        )
                    }))
            let engine = ChartEngine(ledger: ledger, rates: ExchangeRates(ReadChart.rows(Self.rates)), settings: settings)
            // Seven holders a page: the thirty are read in five pages.
            let read = ReadChart(
                database: queue, settings: settings, logger: Logger(label: "test"), clock: WallClock { Self.now },
                holdersPerPage: 7)
            for chart in Chart.allCases {
                for resolution in [Resolution.day, .month] {
                    let input = ReadChart.Input(chart: chart, from: Self.origin, to: Self.now, resolution: resolution)
                    let stored = try await read(input)
                    let expected = try engine.answer(
                        ChartQuery(chart: chart, from: Self.origin, to: Self.now, resolution: resolution, now: Self.now))
                    #expect(stored.values == expected.values, "\(chart) by \(resolution)")
                    #expect(stored.measures == expected.measures && stored.missingRates == expected.missingRates)
                    #expect(stored.missingPrices == expected.missingPrices, "\(chart)")
                    #expect(stored.untaxedStorefronts == expected.untaxedStorefronts, "\(chart)")
                }
            }
            // Drill-downs too: the same figure from the same contributions (read holder by holder).
            for (chart, measure) in [
                (Chart.revenue, "gross"), (.mrr, "mrr"), (.churn, "actives_at_start"), (.cohorts, "paying_1"),
            ] {
                let input = ReadChart.Input(chart: chart, from: Self.origin, to: Self.now, resolution: .month)
                let q = ChartQuery(chart: chart, from: Self.origin, to: Self.now, resolution: .month, now: Self.now)
                let period = PeriodGrid.label(2026, 2, 1)
                let stored = try await read.drill(input, period: period, measure: measure)
                let expected = try engine.drill(q, period: period, measure: measure)
                #expect(stored.value == expected.value && !expected.contributions.isEmpty, "\(chart) \(measure)")
                func key(_ c: Contribution) -> String { "\(c.appUserID) \(c.transactionID ?? "") \(c.value)" }
                #expect(stored.contributions.map(key).sorted() == expected.contributions.map(key).sorted(), "\(chart)")
            }
            // The business has what it is meant to: money in four currencies, refunds, a missing rate.
            let revenue = try engine.answer(
                ChartQuery(chart: .revenue, from: Self.origin, to: Self.now, resolution: .month, now: Self.now))
            #expect(revenue.values.contains { ($0["refunds"] ?? .money(0)) != .money(0) })
            #expect(!revenue.missingRates.isEmpty)
        }
    }
}
