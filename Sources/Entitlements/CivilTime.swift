/// UTC calendar arithmetic on epoch milliseconds, without Foundation's formatters or locales
/// (H. Hinnant's days-from-civil algorithms).
package enum CivilTime {
    /// 9999-12-31T23:59:59.999Z, the last instant RFC 3339 prints with four year digits: no date
    /// this module computes goes past it (dates entering receiptd are checked against the same
    /// bound, `AppleDate.range` in AppStore).
    package static let latest: Int64 = 253_402_300_799_999

    /// RFC 3339 UTC with milliseconds: `2026-11-22T06:01:48.618Z`.
    package static func rfc3339(_ ms: Int64) -> String {
        let (d, t) = split(ms)
        let (year, month, day) = date(fromDays: d)
        // `YYYY-MM-DDTHH:MM:SS.mmmZ`, its digits written into the string's own storage.
        if (0...9999).contains(year) {
            return String(unsafeUninitializedCapacity: 24) { text in
                func put(_ n: Int64, _ width: Int, at end: Int) {
                    var n = n
                    for i in stride(from: end - 1, through: end - width, by: -1) {
                        text[i] = UInt8(ascii: "0") + UInt8(n % 10)
                        n /= 10
                    }
                }
                for (i, c) in [(4, "-"), (7, "-"), (10, "T"), (13, ":"), (16, ":"), (19, "."), (23, "Z")]
                    as [(Int, Unicode.Scalar)]
                {
                    text[i] = UInt8(ascii: c)
                }
                put(year, 4, at: 4)
                put(month, 2, at: 7)
                put(day, 2, at: 10)
                put(t / 3_600_000, 2, at: 13)
                put(t / 60_000 % 60, 2, at: 16)
                put(t / 1000 % 60, 2, at: 19)
                put(t % 1000, 3, at: 23)
                return 24
            }
        }
        func pad(_ n: Int64, _ width: Int) -> String {
            let s = String(n)
            return String(repeating: "0", count: max(0, width - s.count)) + s
        }
        return "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))T\(pad(t / 3_600_000, 2)):\(pad(t / 60_000 % 60, 2)):"
            + "\(pad(t / 1000 % 60, 2)).\(pad(t % 1000, 3))Z"
    }

    /// The instant an RFC 3339 date-time names (`2026-11-22T06:01:48.618Z`, `…T06:01:48Z`,
    /// `…T07:01:48.618123456+01:00`), in epoch milliseconds; digits past the millisecond are
    /// dropped (toward the past). Nil for anything else, or a time outside years 0001–9999.
    package static func instant(rfc3339 text: String) -> Int64? {
        let b = Array(text.utf8)
        func digits(_ at: Int, _ count: Int) -> Int64? {
            guard at + count <= b.count else { return nil }
            var n: Int64 = 0
            for c in b[at..<(at + count)] {
                guard c >= 0x30 && c <= 0x39 else { return nil }
                n = n * 10 + Int64(c - 0x30)
            }
            return n
        }
        func byte(_ at: Int, _ allowed: String) -> Bool { at < b.count && allowed.utf8.contains(b[at]) }
        guard let year = digits(0, 4), byte(4, "-"), let month = digits(5, 2), byte(7, "-"), let day = digits(8, 2),
            byte(10, "Tt"), let hour = digits(11, 2), byte(13, ":"), let minute = digits(14, 2), byte(16, ":"),
            let second = digits(17, 2), year >= 1, (1...12).contains(month), day >= 1,
            day <= daysInMonth(year: year, month: month), hour < 24, minute < 60, second < 60
        else { return nil }
        var i = 19
        var millis: Int64 = 0
        if byte(i, ".") {
            i += 1
            let start = i
            while i < b.count, b[i] >= 0x30 && b[i] <= 0x39 {
                if i - start < 3 { millis = millis * 10 + Int64(b[i] - 0x30) }
                i += 1
            }
            guard i > start else { return nil }
            for _ in 0..<max(0, 3 - (i - start)) { millis *= 10 }
        }
        var offset: Int64 = 0
        if byte(i, "Zz") {
            i += 1
        } else if byte(i, "+-"), let h = digits(i + 1, 2), byte(i + 3, ":"), let m = digits(i + 4, 2), h < 24, m < 60 {
            offset = (h * 60 + m) * 60_000 * (b[i] == 0x2D ? -1 : 1)
            i += 6
        } else {
            return nil
        }
        guard i == b.count else { return nil }
        let ms =
            days(year: year, month: month, day: day) * 86_400_000 + ((hour * 60 + minute) * 60 + second) * 1_000 + millis
            - offset
        return ms <= latest ? ms : nil
    }

    /// (days since 1970-01-01, milliseconds into that day), the latter never negative.
    package static func split(_ ms: Int64) -> (Int64, Int64) {
        let (days, msOfDay) = ms.quotientAndRemainder(dividingBy: 86_400_000)
        return msOfDay < 0 ? (days - 1, msOfDay + 86_400_000) : (days, msOfDay)
    }

    package static func date(fromDays d: Int64) -> (year: Int64, month: Int64, day: Int64) {
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

    package static func days(year: Int64, month: Int64, day: Int64) -> Int64 {
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
