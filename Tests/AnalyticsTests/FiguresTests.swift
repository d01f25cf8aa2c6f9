import Testing

@testable import Analytics

@Suite("Figures")
struct FiguresTests {
    @Test func figuresAreFoundByNameOrColumn() {
        var f = Figures(periods: 3)
        #expect(f.column("mrr") == nil)
        #expect(f[1, "mrr"] == nil)
        f[1, "mrr"] = .money(9_990)
        f[2, "subscriptions"] = .count(4)
        #expect(f.columns == ["mrr", "subscriptions"])
        #expect(f.column("subscriptions") == 1)
        #expect(f[1, 0] == .money(9_990))
        #expect(f[0, 0] == nil && f[2, 0] == nil)
        #expect(f[2, "subscriptions"] == .count(4))
        #expect(f.ensureColumn("mrr") == 0)
        #expect(f.ensureColumn("ratio") == 2)
        f[0, 2] = .ratio(1, 3)
        #expect(f.row(0) == ["ratio": .ratio(1, 3)])
        #expect(f.row(1) == ["mrr": .money(9_990)])
        #expect(f.row(2) == ["subscriptions": .count(4)])
    }

    /// Room made ahead changes nothing; two tables are equal by their figures, not their columns' order.
    @Test func equalityIsByFigures() {
        var a = Figures(periods: 2)
        a.reserve(columns: 100)
        a[0, "x"] = .count(1)
        a[1, "y"] = .count(2)
        _ = a.ensureColumn("empty")
        var b = Figures(periods: 2)
        b[1, "y"] = .count(2)
        b[0, "x"] = .count(1)
        #expect(a == b)
        b[0, "y"] = .count(0)
        #expect(a != b)
        #expect(Figures(periods: 1) != Figures(periods: 2))
    }

    /// A block of periods copied out period after period is each figure at its place, a column
    /// the figures lack read as nothing, whatever was in the block before.
    @Test func rowsAreCopiedOutPeriodAfterPeriod() {
        var f = Figures(periods: 5)
        for p in 0..<5 {
            f[p, "a"] = .count(Int64(p))
            if p % 2 == 0 { f[p, "b"] = .money(Int64(100 * p)) }
        }
        let columns = [f.column("b"), nil, f.column("a")]
        var rows = [Measure?](repeating: .count(-1), count: 2 * columns.count)
        f.rows(3..<5, columns: columns, into: &rows)
        #expect(rows == [nil, nil, .count(3), .money(400), nil, .count(4)])
        f.rows(0..<1, columns: columns, into: &rows)
        #expect(rows[0..<3] == [.money(0), nil, .count(0)])
    }
}
