/// UTC calendar arithmetic on epoch milliseconds, without Foundation's formatters or locales
/// (H. Hinnant's days-from-civil algorithms).
public enum CivilTime {
    /// 9999-12-31T23:59:59.999Z, the last instant RFC 3339 prints with four year digits: no date
    /// this module computes goes past it (dates entering receiptd are checked against the same
    /// bound, `AppleDate.range` in AppStore).
    public static let latest: Int64 = 253_402_300_799_999

    /// RFC 3339 UTC with milliseconds: `2026-11-22T06:01:48.618Z`.
    public static func rfc3339(_ ms: Int64) -> String {
        let (d, t) = split(ms)
        let (year, month, day) = date(fromDays: d)
        func pad(_ n: Int64, _ width: Int) -> String {
            let s = String(n)
            return String(repeating: "0", count: max(0, width - s.count)) + s
        }
        return "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))T\(pad(t / 3_600_000, 2)):\(pad(t / 60_000 % 60, 2)):"
            + "\(pad(t / 1000 % 60, 2)).\(pad(t % 1000, 3))Z"
    }

    /// (days since 1970-01-01, milliseconds into that day), the latter never negative.
    public static func split(_ ms: Int64) -> (Int64, Int64) {
        let (days, msOfDay) = ms.quotientAndRemainder(dividingBy: 86_400_000)
        return msOfDay < 0 ? (days - 1, msOfDay + 86_400_000) : (days, msOfDay)
    }

    public static func date(fromDays d: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let z = d + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = doy - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    public static func days(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    static func daysInMonth(year: Int64, month: Int64) -> Int64 {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }
}
