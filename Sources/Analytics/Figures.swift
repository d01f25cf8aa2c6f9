/// A chart's figures: a row per period, a column per measure. Kept by column, found by index: a
/// cohort chart by day is 730 periods of 1,463 measures, and looking each figure up by its name
/// (a dictionary a period) was most of what it cost to answer.
package struct Figures: Sendable, Equatable {
    /// The columns' measures, in the order they were added.
    package private(set) var columns: [String] = []
    private var index: [String: Int] = [:]
    /// Column after column, a figure per period of its length; nil where nothing was set.
    @usableFromInline var cells: [Measure?] = []
    /// Where each column's cells start, and how many periods it has cells for (from the first):
    /// every period but a cohort table's ages, which only the cohorts that reached them have
    /// (a year by day, 732 columns a table: half the cells).
    @usableFromInline var starts: [Int] = []
    @usableFromInline var lengths: [Int] = []
    package let periods: Int

    package init(periods: Int) { self.periods = periods }

    /// Whether every figure is zero or unset.
    package var isZero: Bool { cells.allSatisfy { $0?.isZero ?? true } }

    /// The column of `measure`, if it has one.
    package func column(_ measure: String) -> Int? { index[measure] }

    /// Room for `more` columns of `cells` cells in all at once (a cohort chart's thousand or
    /// so), instead of as they come.
    package mutating func reserve(columns more: Int, cells count: Int) {
        cells.reserveCapacity(cells.count + count)
        index.reserveCapacity(columns.count + more)
        columns.reserveCapacity(columns.count + more)
        starts.reserveCapacity(columns.count + more)
        lengths.reserveCapacity(columns.count + more)
    }

    /// The column of `measure`, added (empty) when it has none: with cells for the first
    /// `length` periods (every period unless said), the later ones nil and never set.
    package mutating func ensureColumn(_ measure: String, length: Int? = nil) -> Int {
        if let c = index[measure] { return c }
        let length = min(max(0, length ?? periods), periods)
        index[measure] = columns.count
        columns.append(measure)
        starts.append(cells.count)
        lengths.append(length)
        cells.append(contentsOf: repeatElement(nil, count: length))
        return columns.count - 1
    }

    @inlinable package subscript(period: Int, column: Int) -> Measure? {
        get { period < lengths[column] ? cells[starts[column] + period] : nil }
        set {
            precondition(period < lengths[column], "a figure of a period its column has no cell for")
            cells[starts[column] + period] = newValue
        }
    }

    /// The figures of `periods` in `columns` (nil: a column the figures lack), period after
    /// period: `rows[(p - periods.lowerBound) * columns.count + c]`. Figures are kept column after
    /// column and written period after period: copied out a few periods at a time, each column's
    /// in one run, the writing does not jump a column's length in memory for every figure.
    package func rows(_ periods: Range<Int>, columns: [Int?], into rows: inout [Measure?]) {
        let width = columns.count
        cells.withUnsafeBufferPointer { cells in
            rows.withUnsafeMutableBufferPointer { rows in
                for (c, column) in columns.enumerated() {
                    guard let column else {
                        for p in periods { rows[(p - periods.lowerBound) * width + c] = nil }
                        continue
                    }
                    let (start, length) = (starts[column], lengths[column])
                    for p in periods { rows[(p - periods.lowerBound) * width + c] = p < length ? cells[start + p] : nil }
                }
            }
        }
    }

    /// A figure by its measure's name; setting one adds its column when needed.
    package subscript(period: Int, measure: String) -> Measure? {
        get { index[measure].flatMap { self[period, $0] } }
        set {
            let c = ensureColumn(measure)
            self[period, c] = newValue
        }
    }

    /// A period's figures by name (what was set, nothing else): for reading, not for speed.
    package func row(_ period: Int) -> [String: Measure] {
        var row: [String: Measure] = [:]
        for (c, name) in columns.enumerated() {
            if let m = self[period, c] { row[name] = m }
        }
        return row
    }

    /// Equal when every period has the same figures by name, whatever the columns' order.
    package static func == (a: Figures, b: Figures) -> Bool {
        a.periods == b.periods && a.isWithin(b) && b.isWithin(a)
    }

    /// Whether `other` has every figure this has.
    private func isWithin(_ other: Figures) -> Bool {
        for (c, name) in columns.enumerated() {
            let theirs = other.index[name]
            for p in 0..<periods {
                guard let m = self[p, c] else { continue }
                guard let theirs, other[p, theirs] == m else { return false }
            }
        }
        return true
    }
}
