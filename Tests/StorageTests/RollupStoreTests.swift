import Analytics
import DatabaseEngine
import Entitlements
import Storage
import Testing

/// What the rollup keeper prepares before its write: holders' moments as the rows that keep them.
@Suite("Rollup store: moments as rows")
struct RollupStoreTests {
    private func item(_ user: String, _ measure: String, value: Int64) -> ChartItem {
        ChartItem(
            measure: measure, kind: .flow, at: 1_000, until: 1_000, value: value, isMoney: true, appUserID: user,
            originalTransactionID: "o-" + user, transactionID: "t-" + user, bundleID: "com.example", store: .appStore)
    }

    @Test func aHoldersMomentsBecomeARowPerDayAndChartInTheOrderChartsReadThem() {
        let rows = RollupStore.momentRows([
            (
                "b",
                [
                    RollupMoment(
                        environment: "Production", chart: .revenue, item: item("b", "gross", value: 5), days: [20_001, 20_000]),
                    RollupMoment(environment: "Production", chart: .revenue, item: item("b", "net", value: 4), days: [20_000]),
                    RollupMoment(environment: "Production", chart: .mrr, item: item("b", "mrr", value: 3), days: [20_000]),
                ]
            ),
            ("a", [RollupMoment(environment: "Production", chart: .revenue, item: item("a", "gross", value: 7), days: [20_001])]),
            ("c", []),
        ])
        // By day, environment, chart, then holder; one row for b's two revenue items on 20,000.
        #expect(
            rows.map { "\($0.day) \($0.chart.rawValue) \($0.appUserID)" } == [
                "20000 mrr b", "20000 revenue b", "20001 revenue a", "20001 revenue b",
            ])
        let both = rows.first { $0.day == 20_000 && $0.chart == .revenue }!
        #expect(RollupMoment.decode(both.items, appUserID: "b")?.map(\.measure).sorted() == ["gross", "net"])
        #expect(RollupMoment.decode(rows[2].items, appUserID: "a")?.map(\.value) == [7])
    }
}
