import Entitlements
import Testing

@testable import Analytics

func at(_ y: Int64, _ m: Int64, _ d: Int64, _ h: Int64 = 0) -> Int64 {
    CivilTime.days(year: y, month: m, day: d) * 86_400_000 + h * 3_600_000
}

@Suite struct PeriodsTests {
    @Test func monthsRunFromTheFirst() throws {
        let grid = try PeriodGrid(from: at(2026, 1, 15), to: at(2026, 3, 2), resolution: .month, zone: .utc)
        #expect(grid.periods.map(\.label) == ["2026-01-01", "2026-02-01", "2026-03-01"])
        #expect(grid.periods[1].start == at(2026, 2, 1) && grid.periods[1].end == at(2026, 3, 1))
        #expect(grid.index(of: at(2026, 2, 28, 23)) == 1)
        #expect(grid.index(of: at(2026, 4, 1)) == nil)
    }

    @Test func weeksStartOnMonday() throws {
        // 2026-11-25 is a Wednesday.
        let grid = try PeriodGrid(from: at(2026, 11, 25), to: at(2026, 12, 1), resolution: .week, zone: .utc)
        #expect(grid.periods.map(\.label) == ["2026-11-23", "2026-11-30"])
    }

    @Test func daysFollowTheZone() throws {
        let plusTwo = ZoneOffset(name: "+02:00") { _ in 7_200_000 }
        let grid = try PeriodGrid(from: at(2026, 6, 1), to: at(2026, 6, 2), resolution: .day, zone: plusTwo)
        // 2026-06-01T00:00Z is 02:00 local on June 1st: that day began at 22:00Z on May 31st.
        #expect(grid.periods.first?.label == "2026-06-01")
        #expect(grid.periods.first?.start == at(2026, 5, 31, 22))
        #expect(grid.periods.map(\.label) == ["2026-06-01", "2026-06-02"])
    }

    @Test func refusesMoreThanTenYearsOfDays() {
        #expect(throws: PeriodGrid.TooMany.self) {
            try PeriodGrid(from: at(2000, 1, 1), to: at(2026, 1, 1), resolution: .day, zone: .utc)
        }
    }
}
