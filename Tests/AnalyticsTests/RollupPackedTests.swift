import ReceiptTesting
import Testing

@testable import Analytics

/// A holder's rows packed as they are kept: every holder's rows back as kept, byte for byte in
/// their texts; anything else, nil.
@Suite("Packed rollup rows")
struct RollupPackedTests {
    static func sorted(_ rows: [RollupRow]) -> [RollupRow] { rows.sorted { $0.key < $1.key } }

    @Test(arguments: [7, 40] as [UInt64])
    func everyHoldersRowsReadBackAsKept(seed: UInt64) throws {
        let (facts, owners) = SampleBusiness.business(seed: seed)
        let holders = RollupTests.holders(SampleBusiness.ledger(facts, owners: owners))
        var packed = 0
        for holder in holders + RollupTests.paired(holders) {
            let kept = Rollup.holder(holder, settings: RollupTests.settings, rates: RollupTests.rates, writtenAt: 0)
            let bytes = RollupRow.packed(kept.kept, oneGroup: kept.oneGroup)
            let back = try #require(RollupRow.unpacked(bytes))
            #expect(back.oneGroup == kept.oneGroup)
            #expect(Self.sorted(back.kept) == Self.sorted(kept.kept))
            packed += bytes.count
        }
        #expect(packed > 0)
    }

    /// Texts are their bytes (two spellings of one name are two texts), the unbounded days and
    /// the extreme values come back, and a split row keeps its group.
    @Test func extremesAndSpellingsComeBack() throws {
        let rows = Self.extremes
        let back = try #require(RollupRow.unpacked(RollupRow.packed(rows, oneGroup: ["sandbox": "GBR\u{1F}monthly"])))
        // In the order of their numbers; each row's bundle id in its own bytes.
        #expect(Self.sorted(back.kept) == Self.sorted(rows))
        #expect(back.oneGroup == ["sandbox": "GBR\u{1F}monthly"])
        func bytes(_ rows: [RollupRow]) -> [Int64: [UInt8]] {
            Dictionary(uniqueKeysWithValues: rows.map { ($0.value, Array($0.key.bundleID.utf8)) })
        }
        #expect(bytes(back.kept) == bytes(rows))
    }

    /// Every cut of a packing, a flipped version and trailing bytes are not rows.
    @Test func anythingElseIsNil() {
        let (facts, owners) = SampleBusiness.business(seed: 7)
        let holder = RollupTests.holders(SampleBusiness.ledger(facts, owners: owners)).max {
            $0.entries.count < $1.entries.count
        }!
        let kept = Rollup.holder(holder, settings: RollupTests.settings, rates: RollupTests.rates, writtenAt: 0)
        let bytes = RollupRow.packed(kept.kept, oneGroup: kept.oneGroup)
        #expect(RollupRow.unpacked(bytes) != nil)
        for end in 0..<bytes.count { #expect(RollupRow.unpacked(Array(bytes[..<end])) == nil, "cut at \(end)") }
        #expect(RollupRow.unpacked([3] + bytes.dropFirst()) == nil)
        #expect(RollupRow.unpacked([1] + bytes.dropFirst()) == nil)
        #expect(RollupRow.unpacked(bytes + [0]) == nil)
        #expect(RollupRow.unpacked([]) == nil)
    }

    /// Two rows, byte by byte: the base day, how many texts of the vocabulary the numbers count
    /// on (104), the holder's own texts (a group, a bundle id), the environment of one group, then
    /// the rows in the order of their numbers: the first (revenue, 8, before mrr, 9) as every
    /// field that is not 0, the second as the four that differ (chart, measure, kind, until).
    @Test func twoRowsPackAsTheirDifferences() throws {
        let rows = [
            Self.row(chart: .mrr, measure: "mrr", kind: .stock, untilDay: .max),
            Self.row(chart: .revenue, measure: "net", kind: .flow, untilDay: 20_000),
        ]
        let bytes = RollupRow.packed(rows, oneGroup: ["production": "USA\u{1F}monthly"])
        let expected =
            "02c0b80268020b5553411f6d6f6e74686c7905636f6d2e7801016802"  // version, base, texts, group
            + "efd6010108330569030202018c9c0102"  // revenue: every field not 0
            + "8e0409090601"  // mrr: chart, measure, kind, until
        #expect(Self.hex(bytes) == expected)
        let back = try #require(RollupRow.unpacked(bytes))
        #expect(back.kept == rows.reversed())
        #expect(back.oneGroup == ["production": "USA\u{1F}monthly"])
    }

    /// Rows packed as version 1 (every text the holder's, each row whole, zlib-compressed as
    /// kept), the packing before this one, read back as they were kept.
    @Test func rowsPackedAsVersionOneStillReadBack() throws {
        let version1 =
            "01c0b8020d0773616e64626f780b4742521f6d6f6e74686c790a70726f64756374696f6e07726576656e7565036e657404666c6f7704"
            + "5a6fc3ab096170705f73746f726500055a6f65cc88054409450a55056109625c63011f010300010203040501060708020100c7b802ff"
            + "ffffffffffffffff019693d89fee47020304050b090708000100c7b802c1a233feffffffffffffffff019693d89fee470a0b0304050d"
            + "080708c3b8020100c7b802c2c7fdffff3f009693d89fee470c"
        let bytes = Self.bytes(hex: version1)
        let back = try #require(RollupRow.unpacked(bytes))
        #expect(back.kept == Self.extremes)
        for end in 0..<bytes.count { #expect(RollupRow.unpacked(Array(bytes[..<end])) == nil, "cut at \(end)") }
        #expect(RollupRow.unpacked(bytes + [0]) == nil)
        #expect(back.oneGroup == ["sandbox": "GBR\u{1F}monthly"])
    }

    private static func extremeRow(
        _ environment: String, _ bundleID: String, at: Int64, cohort: Int64, value: Int64, split: RollupSplit, group: String
    )
        -> RollupRow
    {
        RollupRow(
            key: .init(
                environment: environment, chart: .revenue, measure: "net", kind: .flow, settled: true, bundleID: bundleID,
                store: "app_store", note: "", atDay: at, untilDay: .max, validFromDay: .min, validUntilDay: -3,
                cohortDay: cohort, split: split, group: group),
            value: value, items: 1_234_567_890_123)
    }

    static let extremes = [
        extremeRow("production", "Zo\u{EB}", at: 20_000, cohort: RollupRow.noCohort, value: .min, split: .none, group: ""),
        extremeRow("production", "Zoe\u{308}", at: .min, cohort: -400_000, value: .max, split: .country, group: "D\tE\nU"),
        extremeRow("a\tb\\c", "", at: -1, cohort: 1 << 40, value: 0, split: .product, group: "\u{1F}"),
    ]

    static func row(chart: Chart, measure: String, kind: ChartItem.Kind, untilDay: Int64) -> RollupRow {
        RollupRow(
            key: .init(
                environment: "production", chart: chart, measure: measure, kind: kind, bundleID: "com.x", store: "app_store",
                note: "", atDay: 20_000, untilDay: untilDay, validFromDay: .min, validUntilDay: .max,
                cohortDay: RollupRow.noCohort),
            value: 9_990, items: 1)
    }

    static func hex(_ bytes: [UInt8]) -> String {
        bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
    }

    static func bytes(hex: String) -> [UInt8] {
        let digits = Array(hex.utf8)
        return stride(from: 0, to: digits.count, by: 2).map {
            UInt8(String(decoding: digits[$0..<$0 + 2], as: UTF8.self), radix: 16)!
        }
    }
}
