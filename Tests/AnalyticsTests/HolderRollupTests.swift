import ReceiptTesting
import Testing

@testable import Analytics

/// A holder's rows as kept, and the sums of many: the split rows of a holder of one group are
/// made once from the sums, and add up to what every holder's own split rows add up to.
@Suite("Holder rollups")
struct HolderRollupTests {
    static func sums(_ rows: [RollupRow]) -> [RollupRow.Key: (Int64, Int64)] {
        var sums: [RollupRow.Key: (Int64, Int64)] = [:]
        for row in rows {
            sums[row.key] = ((sums[row.key]?.0 ?? 0) + row.value, (sums[row.key]?.1 ?? 0) + row.items)
        }
        return sums.filter { $0.value != (0, 0) }
    }

    static func sorted(_ sums: [RollupRow.Key: (Int64, Int64)]) -> [RollupRow] {
        sums.map { RollupRow(key: $0.key, value: $0.value.0, items: $0.value.1) }.sorted { $0.key < $1.key }
    }

    /// Holders of one group (the sample's) and of several (paired): their summed rows, the split
    /// rows of the first made from the sums, are the sums of every holder's every row.
    @Test(arguments: [7, 40] as [UInt64])
    func summedHoldersAddUpToTheirEveryRow(seed: UInt64) {
        let (facts, owners) = SampleBusiness.business(seed: seed)
        let holders = RollupTests.holders(SampleBusiness.ledger(facts, owners: owners))
        var summed = RollupSums()
        var every: [RollupRow] = []
        var oneGroup = 0
        for holder in holders + RollupTests.paired(holders) {
            let kept = Rollup.holder(holder, settings: RollupTests.settings, rates: RollupTests.rates, writtenAt: 0)
            summed.add(kept.kept, oneGroup: kept.oneGroup, sign: 1)
            every += kept.rows
            if !kept.oneGroup.isEmpty { oneGroup += 1 }
            #expect(kept.kept.allSatisfy { $0.key.split == .none || kept.oneGroup[$0.key.environment] == nil })
        }
        #expect(oneGroup > 0 && oneGroup < holders.count * 3 / 2)
        #expect(summed.rows().sorted { $0.key < $1.key } == Self.sorted(Self.sums(every)))
    }

    /// A changed holder adds the difference of their rows: their old rows taken away and their
    /// new ones added, the old rows and the difference sum to the new; the same rows twice, to nothing.
    @Test func aChangedHolderIsADifference() {
        let (facts, owners) = SampleBusiness.business(seed: 7)
        let holder = RollupTests.holders(SampleBusiness.ledger(facts, owners: owners)).max {
            $0.entries.count < $1.entries.count
        }!
        var later = holder
        later.entries.removeLast()
        let old = Rollup.holder(holder, settings: RollupTests.settings, rates: RollupTests.rates, writtenAt: 0)
        let new = Rollup.holder(later, settings: RollupTests.settings, rates: RollupTests.rates, writtenAt: 0)
        #expect(!old.oneGroup.isEmpty)
        var difference = RollupSums()
        difference.add(old.kept, oneGroup: old.oneGroup, sign: -1)
        difference.add(new.kept, oneGroup: new.oneGroup, sign: 1)
        #expect(Self.sorted(Self.sums(old.rows + difference.rows())) == new.rows.sorted { $0.key < $1.key })
        var none = RollupSums()
        none.add(new.kept, oneGroup: new.oneGroup, sign: -1)
        none.add(new.kept, oneGroup: new.oneGroup, sign: 1)
        #expect(none.rows().isEmpty)
    }

    /// Kept rows read back as kept: the split rows of one group not made, the group named.
    @Test func keptRowsReadBackAsKept() throws {
        let (facts, owners) = SampleBusiness.business(seed: 7)
        for holder in RollupTests.holders(SampleBusiness.ledger(facts, owners: owners)).prefix(20) {
            let kept = Rollup.holder(holder, settings: RollupTests.settings, rates: RollupTests.rates, writtenAt: 0)
            let back = try #require(RollupRow.decodeKept(RollupRow.encode(kept.kept, oneGroup: kept.oneGroup)))
            #expect(back.oneGroup == kept.oneGroup)
            #expect(back.kept.sorted { $0.key < $1.key } == kept.kept.sorted { $0.key < $1.key })
        }
    }
}
