import Analytics
import DatabaseEngine
import Entitlements
import Foundation
import Gzip
import ReceiptTesting
import Storage
import Testing

/// What the rollup keeper prepares before its write (holders' moments as the rows that keep
/// them), and the sums as it writes and charts read them.
@Suite("Rollup store")
struct RollupStoreTests {
    private func item(_ user: String, _ measure: String, value: Int64) -> ChartItem {
        ChartItem(
            measure: measure, kind: .flow, at: 1_000, until: 1_000, value: value, isMoney: true, appUserID: user,
            originalTransactionID: "o-" + user, transactionID: "t-" + user, bundleID: "com.example", store: .appStore)
    }

    /// A holder's rows are kept packed, in base64; rows kept packed as version 1 and compressed,
    /// or as compressed text (rollup format 6 and before), read back the same, and so do their marks.
    @Test func keptRowsArePackedAndTextKeptBeforeStillReads() throws {
        let rows = [
            RollupRow(
                key: .init(
                    environment: "production", chart: .mrr, measure: "mrr", kind: .stock, bundleID: "com.x", store: "app_store",
                    note: "", atDay: 20_000, untilDay: .max, validFromDay: .min, validUntilDay: .max,
                    cohortDay: RollupRow.noCohort),
                value: 9_990, items: 1),
            RollupRow(
                key: .init(
                    environment: "production", chart: .revenue, measure: "net", kind: .flow, bundleID: "com.x",
                    store: "app_store",
                    note: "", atDay: 20_000, untilDay: 20_000, validFromDay: .min, validUntilDay: .max,
                    cohortDay: RollupRow.noCohort),
                value: 9_990, items: 1),
        ]
        let oneGroup = ["production": "USA\u{1F}monthly"]
        let kept = RollupStore.kept(rows, oneGroup: oneGroup)
        #expect(kept.hasPrefix("b"))
        // These rows packed as version 1 (RollupPackedTests has its layout).
        let version1: [UInt8] = [
            1, 192, 184, 2, 10, 10, 112, 114, 111, 100, 117, 99, 116, 105, 111, 110, 11, 85, 83, 65, 31, 109, 111, 110, 116, 104,
            108, 121, 3, 109, 114, 114, 5, 115, 116, 111, 99, 107, 5, 99, 111, 109, 46, 120, 9, 97, 112, 112, 95, 115, 116,
            111, 114, 101, 0, 7, 114, 101, 118, 101, 110, 117, 101, 3, 110, 101, 116, 4, 102, 108, 111, 119, 1, 2, 0, 1, 0, 2,
            2, 3, 0, 4, 5, 6, 2, 1, 0, 1, 140, 156, 1, 2, 0, 7, 8, 9, 0, 4, 5, 6, 2, 2, 0, 1, 140, 156, 1, 2,
        ]
        let packedBefore = "p" + Deflated.pack(bytes: version1)
        let before = Deflated.pack(RollupRow.encode(rows, oneGroup: oneGroup))
        #expect(before.hasPrefix("z"))
        for text in [kept, packedBefore, before] {
            let back = try #require(RollupStore.holder(ofKept: text))
            #expect(back.kept.sorted { $0.key < $1.key } == rows.sorted { $0.key < $1.key } && back.oneGroup == oneGroup)
            #expect(RollupStore.rows(ofKept: text)?.count == 6)
            #expect(RollupStore.marks(ofKept: text) == RollupMark.marks(of: rows))
        }
        #expect(RollupStore.holder(ofKept: "p!!") == nil)
        #expect(RollupStore.holder(ofKept: "b!!") == nil)
        #expect(RollupStore.holder(ofKept: "b" + Data("not rows".utf8).base64EncodedString()) == nil)
        #expect(RollupStore.holder(ofKept: "p" + Deflated.pack("not rows")) == nil)
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

extension RollupStoreTests {
    /// Split rows are summed in their own table, each split and value apart, read only when a
    /// query names the split; a sum left with no item goes, as an unsplit one does.
    @Test(arguments: await testDialects())
    func splitRowsAreSummedApartAndGoneAtNoItem(dialect: Database.Dialect) async throws {
        @Sendable func row(_ split: RollupSplit, _ group: String, _ value: Int64, items: Int64) -> RollupRow {
            RollupRow(
                key: .init(
                    environment: "production", chart: .mrr, measure: "mrr", kind: .stock, bundleID: "com.x", store: "app_store",
                    note: "", atDay: 20_000, untilDay: .max, validFromDay: .min, validUntilDay: .max,
                    cohortDay: RollupRow.noCohort, split: split, group: group),
                value: value, items: items)
        }
        try await withScratchDirectory("rollup-splits") { dir in
            let queue = try await migratedQueue(dialect, in: dir)
            func read() async throws -> [RollupSplit: [String]] {
                try await queue.read { db in
                    var out: [RollupSplit: [String]] = [:]
                    for split in RollupSplit.allCases {
                        out[split] = try RollupStore(db).rows(environment: "production", chart: .mrr, split: split).map {
                            "\($0.key.split.rawValue):\($0.key.group)=\($0.value)/\($0.items)"
                        }.sorted()
                    }
                    return out
                }
            }
            try await queue.write(attached: true) { db in
                try RollupStore(db).add([
                    row(.none, "", 5, items: 1), row(.country, "DEU", 5, items: 1), row(.product, "m", 5, items: 1),
                ])
                try RollupStore(db).add([row(.country, "DEU", 3, items: 1), row(.country, "FRA", 2, items: 1)])
            }
            #expect(
                try await read() == [
                    .none: [":=5/1"], .country: ["country:DEU=8/2", "country:FRA=2/1"], .product: ["product:m=5/1"],
                ])
            try await queue.write(attached: true) { db in
                try RollupStore(db).add([row(.country, "DEU", -8, items: -2), row(.none, "", -5, items: -1)])
            }
            #expect(try await read() == [.none: [], .country: ["country:FRA=2/1"], .product: ["product:m=5/1"]])
            try await queue.write(attached: true) { db in try RollupStore(db).clear() }
            #expect(try await read() == [.none: [], .country: [], .product: []])
        }
    }

    /// A query reads the rows starting on its last day or before and, from `cohortsFrom` on, of
    /// a cohort from that day on or of none: unsplit and split alike.
    @Test(arguments: await testDialects())
    func rowsAreReadUpToTheLastDayAndFromTheFirstCohort(dialect: Database.Dialect) async throws {
        @Sendable func row(_ split: RollupSplit, at: Int64, cohort: Int64) -> RollupRow {
            RollupRow(
                key: .init(
                    environment: "production", chart: .cohorts, measure: "paying", kind: .stock, bundleID: "com.x",
                    store: "app_store", note: "", atDay: at, untilDay: .max, validFromDay: .min, validUntilDay: .max,
                    cohortDay: cohort, split: split, group: split == .none ? "" : "DEU"),
                value: 1, items: 1)
        }
        try await withScratchDirectory("rollup-bounds") { dir in
            let queue = try await migratedQueue(dialect, in: dir)
            let days: [(Int64, Int64)] = [
                (20_000, 19_999), (20_000, 20_000), (20_001, 20_001), (20_002, 20_001), (20_000, RollupRow.noCohort),
                (20_003, RollupRow.noCohort),
            ]
            try await queue.write(attached: true) { db in
                try RollupStore(db).add(
                    days.flatMap { [row(.none, at: $0.0, cohort: $0.1), row(.country, at: $0.0, cohort: $0.1)] })
            }
            for split in [RollupSplit.none, .country] {
                func read(through: Int64 = .max, from: Int64 = RollupRow.noCohort) async throws -> [String] {
                    try await queue.read { db in
                        try RollupStore(db).rows(
                            environment: "production", chart: .cohorts, throughDay: through, cohortsFrom: from, split: split
                        ).map { "\($0.key.atDay)/\($0.key.cohortDay == RollupRow.noCohort ? "-" : String($0.key.cohortDay))" }
                            .sorted()
                    }
                }
                #expect(
                    try await read() == ["20000/-", "20000/19999", "20000/20000", "20001/20001", "20002/20001", "20003/-"])
                #expect(try await read(from: 20_000) == ["20000/-", "20000/20000", "20001/20001", "20002/20001", "20003/-"])
                #expect(try await read(through: 20_001, from: 20_001) == ["20000/-", "20001/20001"])
            }
        }
    }
}
