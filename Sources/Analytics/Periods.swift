import Entitlements

/// How finely a chart cuts time.
package enum Resolution: String, Sendable, CaseIterable {
    case day, week, month
}

/// A time zone as the offset from UTC it has at each instant (milliseconds), so the grid is
/// pure: the caller turns an IANA name into this; tests pass a constant.
package struct ZoneOffset: Sendable {
    package var name: String
    package var offset: @Sendable (Int64) -> Int64

    package init(name: String, offset: @escaping @Sendable (Int64) -> Int64) {
        self.name = name
        self.offset = offset
    }

    package static let utc = ZoneOffset(name: "UTC") { _ in 0 }
}

/// One bucket of a chart: [start, end) in epoch milliseconds, named by its first local day.
package struct Period: Sendable, Equatable {
    package var start: Int64
    package var end: Int64
    /// `2026-11-01` for November at month resolution; a week is named by its Monday.
    package var label: String
}

/// The periods from the one holding `from` to the one holding the instant before `to`, at a
/// resolution, in a time zone: days start at local midnight, weeks on Monday (ISO 8601),
/// months on the 1st.
package struct PeriodGrid: Sendable {
    package let periods: [Period]
    package let resolution: Resolution

    /// At most this many periods: ten years of days.
    package static let maxPeriods = 3_660

    package struct TooMany: Error, Equatable {}

    package init(from: Int64, to: Int64, resolution: Resolution, zone: ZoneOffset) throws(TooMany) {
        self.resolution = resolution
        var periods: [Period] = []
        var day = Self.localDay(of: from, zone: zone)
        day = Self.align(day, resolution)
        while true {
            let next = Self.advance(day, resolution)
            let start = Self.instant(ofLocalDay: day, zone: zone)
            guard start < to || periods.isEmpty else { break }
            guard periods.count < Self.maxPeriods else { throw TooMany() }
            let (y, m, d) = CivilTime.date(fromDays: day)
            periods.append(
                Period(start: start, end: Self.instant(ofLocalDay: next, zone: zone), label: Self.label(y, m, d)))
            day = next
        }
        self.periods = periods
    }

    /// The period holding `t`, if any.
    package func index(of t: Int64) -> Int? {
        var low = 0
        var high = periods.count
        while low < high {
            let mid = (low + high) / 2
            if periods[mid].start <= t { low = mid + 1 } else { high = mid }
        }
        guard low > 0, t < periods[low - 1].end else { return nil }
        return low - 1
    }

    package static func label(_ y: Int64, _ m: Int64, _ d: Int64) -> String {
        func pad(_ n: Int64, _ w: Int) -> String { String(repeating: "0", count: max(0, w - String(n).count)) + String(n) }
        return "\(pad(y, 4))-\(pad(m, 2))-\(pad(d, 2))"
    }

    /// The local calendar day (days since 1970-01-01) holding `t`.
    static func localDay(of t: Int64, zone: ZoneOffset) -> Int64 {
        CivilTime.split(t + zone.offset(t)).0
    }

    /// The instant local midnight of `day` (days since 1970-01-01) begins in `zone`: what a date
    /// without a time means in a request that names its zone.
    package static func instant(ofLocalDay day: Int64, zone: ZoneOffset) -> Int64 {
        let local = day * 86_400_000
        // The offset in force at that instant: guessed from local time, then checked once.
        let guess = local - zone.offset(local)
        return local - zone.offset(guess)
    }

    static func align(_ day: Int64, _ resolution: Resolution) -> Int64 {
        switch resolution {
        case .day: return day
        case .week:
            // 1970-01-01 was a Thursday: Monday is 3 days before it.
            let sinceMonday = ((day + 3) % 7 + 7) % 7
            return day - sinceMonday
        case .month:
            let (y, m, _) = CivilTime.date(fromDays: day)
            return CivilTime.days(year: y, month: m, day: 1)
        }
    }

    static func advance(_ day: Int64, _ resolution: Resolution) -> Int64 {
        switch resolution {
        case .day: return day + 1
        case .week: return day + 7
        case .month:
            let (y, m, _) = CivilTime.date(fromDays: day)
            return m == 12 ? CivilTime.days(year: y + 1, month: 1, day: 1) : CivilTime.days(year: y, month: m + 1, day: 1)
        }
    }
}
