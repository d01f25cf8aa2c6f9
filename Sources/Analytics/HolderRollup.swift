/// What one holder adds to the rollups (``Rollup/holder(_:settings:rates:writtenAt:)``): their
/// rows but the split copies of the environments of one group (two thirds of most holders'
/// rows), which those environments' groups stand for; and their moments.
package struct HolderRollup: Sendable {
    /// Every row but the split rows of `oneGroup`'s environments: what is kept of the holder
    /// (``RollupRow/packed(_:oneGroup:)``) and what their marks are read from.
    package var kept: [RollupRow]
    package var moments: [RollupMoment]
    /// The environments whose every item is in one kept group, with that group.
    package var oneGroup: [String: String]

    package init(kept: [RollupRow], moments: [RollupMoment] = [], oneGroup: [String: String] = [:]) {
        self.kept = kept
        self.moments = moments
        self.oneGroup = oneGroup
    }

    /// Every row, the split rows of one group's environments made.
    package var rows: [RollupRow] { oneGroup.isEmpty ? kept : kept + Rollup.split(kept, oneGroup: oneGroup) }
}

/// Rows summed across holders, by key: what a step of the keeper adds to the sums. The unsplit
/// rows of an environment of one group are summed by that group too, once, and their split rows
/// made from the sums at the end (``rows()``), rather than each holder's made and summed.
package struct RollupSums {
    private var sums: [RollupRow.Key: (value: Int64, items: Int64)] = [:]
    /// The unsplit rows of one group's environments, each with that group as its `group`.
    private var grouped: [RollupRow.Key: (value: Int64, items: Int64)] = [:]

    package init() {}

    /// Adds `rows` (a holder's, as kept: ``HolderRollup/kept``), each `sign` times, with the
    /// split rows of `oneGroup`'s environments.
    package mutating func add(_ rows: [RollupRow], oneGroup: [String: String], sign: Int64) {
        for row in rows {
            if row.key.split == .none, let group = oneGroup[row.key.environment] {
                var key = row.key
                key.group = group
                Rollup.add(sign * row.value, items: sign * row.items, to: &grouped[key, default: (0, 0)])
            } else {
                Rollup.add(sign * row.value, items: sign * row.items, to: &sums[row.key, default: (0, 0)])
            }
        }
    }

    /// The sums as rows, those that sum to nothing left out, in no particular order.
    package func rows() -> [RollupRow] {
        var sums = sums
        for (key, sum) in grouped where sum != (0, 0) {
            var unsplit = key
            unsplit.group = ""
            Rollup.add(sum.value, items: sum.items, to: &sums[unsplit, default: (0, 0)])
            for split in RollupSplit.kept {
                var row = key
                row.split = split
                row.group = split.value(inKept: key.group)
                Rollup.add(sum.value, items: sum.items, to: &sums[row, default: (0, 0)])
            }
        }
        return sums.compactMap { key, sum in
            sum == (0, 0) ? nil : RollupRow(key: key, value: sum.value, items: sum.items)
        }
    }
}
