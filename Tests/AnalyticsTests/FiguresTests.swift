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
        a.reserve(columns: 100, cells: 200)
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

    /// A column of a few periods' cells (a cohort table's age) reads nil past them, by index, by
    /// name, in rows and in equality, beside columns of every period added before and after.
    @Test func aShortColumnHasCellsForItsFirstPeriodsAlone() {
        var f = Figures(periods: 4)
        f[3, "customers"] = .count(7)
        let short = f.ensureColumn("paying_2", length: 2)
        #expect(f.ensureColumn("paying_2", length: 4) == short)
        let none = f.ensureColumn("paying_9", length: -5)
        f[0, short] = .count(5)
        f[1, short] = .count(6)
        f[2, "revenue"] = .money(10)
        #expect((0..<4).map { f[$0, short] } == [.count(5), .count(6), nil, nil])
        #expect((0..<4).map { f[$0, none] } == [nil, nil, nil, nil])
        #expect(f[3, "customers"] == .count(7) && f[2, "revenue"] == .money(10) && f[3, "paying_2"] == nil)
        var rows = [Measure?](repeating: .count(-1), count: 4 * 3)
        f.rows(0..<4, columns: [f.column("customers"), short, f.column("revenue")], into: &rows)
        #expect(rows == [nil, .count(5), nil, nil, .count(6), nil, nil, nil, .money(10), .count(7), nil, nil])
        var full = Figures(periods: 4)
        full[1, "paying_2"] = .count(6)
        full[0, "paying_2"] = .count(5)
        full[3, "customers"] = .count(7)
        full[2, "revenue"] = .money(10)
        #expect(f == full)
        #expect(f.row(1) == ["paying_2": .count(6)])
    }
}
