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
        // About what the text took compressed (a kilobyte for fifty rows).
        #expect(packed > 0)
    }

    /// Texts are their bytes (two spellings of one name are two texts), the unbounded days and
    /// the extreme values come back, and a split row keeps its group.
    @Test func extremesAndSpellingsComeBack() throws {
        func row(
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
        let rows = [
            row("production", "Zo\u{EB}", at: 20_000, cohort: RollupRow.noCohort, value: .min, split: .none, group: ""),
            row("production", "Zoe\u{308}", at: .min, cohort: -400_000, value: .max, split: .country, group: "D\tE\nU"),
            row("a\tb\\c", "", at: -1, cohort: 1 << 40, value: 0, split: .product, group: "\u{1F}"),
        ]
        let back = try #require(RollupRow.unpacked(RollupRow.packed(rows, oneGroup: ["sandbox": "GBR\u{1F}monthly"])))
        #expect(back.kept == rows)
        #expect(back.oneGroup == ["sandbox": "GBR\u{1F}monthly"])
        #expect(back.kept.map(\.key.bundleID.utf8.count) == [4, 5, 0])
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
        #expect(RollupRow.unpacked([2] + bytes.dropFirst()) == nil)
        #expect(RollupRow.unpacked(bytes + [0]) == nil)
        #expect(RollupRow.unpacked([]) == nil)
    }
}
