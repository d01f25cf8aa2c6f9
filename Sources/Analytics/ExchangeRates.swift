import Entitlements

/// Reference rates the operator loaded, as units of each currency per euro on a day (the ECB's
/// form), held as integers of six decimal places. A day the ECB published nothing for (weekends,
/// TARGET holidays) takes the latest publication at most ``lookbackDays`` before it, as the ECB's
/// reference rate stands until the next; further back is missing, and is reported, never guessed.
package struct ExchangeRates: Sendable {
    /// Four days cover the longest TARGET closure (Good Friday to Easter Monday).
    package static let lookbackDays: Int64 = 4
    /// Six decimal places: 1.0823 is 1,082,300.
    package static let scale: Int64 = 1_000_000

    /// currency → (day number since 1970-01-01, rate) in day order.
    private var table: [String: [(day: Int64, perEuro: Int64)]] = [:]
    /// Development's simulated rates (``AnalyticsSettings/simulatedRates``): for any day the
    /// loaded ones leave without a rate.
    private var simulated: [String: Int64] = [:]

    package init(_ rows: [Row] = [], simulated: [String: Int64] = [:]) {
        var table: [String: [(day: Int64, perEuro: Int64)]] = [:]
        for row in rows { table[row.currency, default: []].append((row.day, row.perEuro)) }
        for key in table.keys { table[key]!.sort { $0.day < $1.day } }
        self.table = table
        self.simulated = simulated
    }

    /// One published rate.
    package struct Row: Sendable, Equatable {
        /// Days since 1970-01-01.
        package var day: Int64
        package var currency: String
        /// Units of `currency` per euro, six decimal places.
        package var perEuro: Int64

        package init(day: Int64, currency: String, perEuro: Int64) {
            self.day = day
            self.currency = currency
            self.perEuro = perEuro
        }
    }

    /// Units of `currency` per euro that stand on `day`; EUR is 1. Nil when none was published
    /// within ``lookbackDays`` (and none is simulated).
    package func perEuro(_ currency: String, day: Int64) -> Int64? {
        if currency == "EUR" { return Self.scale }
        return published(currency, day: day) ?? simulated[currency]
    }

    private func published(_ currency: String, day: Int64) -> Int64? {
        guard let rates = table[currency] else { return nil }
        // The last publication on or before `day`.
        var low = 0
        var high = rates.count
        while low < high {
            let mid = (low + high) / 2
            if rates[mid].day <= day { low = mid + 1 } else { high = mid }
        }
        guard low > 0, day - rates[low - 1].day <= Self.lookbackDays else { return nil }
        return rates[low - 1].perEuro
    }

    /// `milliunits` of `from` in `to` at `day`'s rates, rounded once (half to even); nil when
    /// either rate is missing.
    package func convert(_ milliunits: Int64, from: String, to: String, day: Int64) -> Int64? {
        convert(milliunits, times: 1, over: 1, from: from, to: to, day: day)
    }

    /// `milliunits × numerator ÷ denominator` converted, with a single rounding.
    package func convert(
        _ milliunits: Int64, times numerator: Int64, over denominator: Int64, from: String, to: String, day: Int64
    )
        -> Int64?
    {
        if from == to { return Money.scale(milliunits, by: Int128(numerator), over: Int128(denominator)) }
        guard let source = perEuro(from, day: day), let target = perEuro(to, day: day) else { return nil }
        return Money.scale(milliunits, by: Int128(numerator) * Int128(target), over: Int128(denominator) * Int128(source))
    }
}

/// The ECB's euro foreign exchange reference rates as published in CSV: the history file
/// (`eurofxref-hist.csv`: `Date,USD,JPY,…` then `2026-11-20,1.0523,…,N/A,`) or the day's file
/// (`eurofxref.csv`: `Date, USD, …` then `20 November 2026, 1.0523, …`).
/// https://www.ecb.europa.eu/stats/policy_and_exchange_rates/euro_reference_exchange_rates/html/index.en.html
package enum ECBReferenceRates {
    package struct Malformed: Error, Equatable, CustomStringConvertible {
        package var line: Int
        package var reason: String
        package var description: String { "line \(line): \(reason)" }
    }

    package static func parse(_ text: String) throws(Malformed) -> [ExchangeRates.Row] {
        var lines = text.split(whereSeparator: { $0 == "\n" || $0 == "\r\n" || $0 == "\r" }).map(String.init)
        guard !lines.isEmpty else { throw Malformed(line: 1, reason: "empty: no header") }
        let header = fields(lines.removeFirst())
        guard header.first == "Date", header.count > 1 else {
            throw Malformed(line: 1, reason: "the header must start with `Date`, then currency codes")
        }
        let currencies = Array(header.dropFirst())
        for code in currencies where !code.isEmpty && !Price.isCurrencyCode(code) {
            throw Malformed(line: 1, reason: "`\(code)` is not a currency code")
        }
        var rows: [ExchangeRates.Row] = []
        for (offset, line) in lines.enumerated() where !line.trimmingSpaces.isEmpty {
            let number = offset + 2
            let values = fields(line)
            guard let dateText = values.first, let day = day(dateText) else {
                throw Malformed(line: number, reason: "no date (YYYY-MM-DD or `20 November 2026`)")
            }
            for (index, value) in values.dropFirst().enumerated() where index < currencies.count {
                let code = currencies[index]
                guard !code.isEmpty, !value.isEmpty, value != "N/A" else { continue }
                guard let rate = Money.decimal(value, places: 6), rate > 0 else {
                    throw Malformed(line: number, reason: "`\(value)` for \(code) is not a positive decimal of at most 6 places")
                }
                rows.append(ExchangeRates.Row(day: day, currency: code, perEuro: rate))
            }
        }
        return rows
    }

    static func fields(_ line: String) -> [String] {
        line.split(separator: ",", omittingEmptySubsequences: false).map { String($0).trimmingSpaces }
    }

    static let months = [
        "January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November",
        "December",
    ]

    /// `2026-11-20` or `20 November 2026` as days since 1970-01-01.
    package static func day(_ text: String) -> Int64? {
        let iso = text.split(separator: "-")
        if iso.count == 3, let y = Int64(iso[0]), let m = Int64(iso[1]), let d = Int64(iso[2]) {
            return civilDay(y, m, d)
        }
        let words = text.split(separator: " ")
        if words.count == 3, let d = Int64(words[0]), let index = months.firstIndex(of: String(words[1])),
            let y = Int64(words[2])
        {
            return civilDay(y, Int64(index) + 1, d)
        }
        return nil
    }

    static func civilDay(_ y: Int64, _ m: Int64, _ d: Int64) -> Int64? {
        guard (1999...9999).contains(y), (1...12).contains(m), (1...31).contains(d) else { return nil }
        let day = CivilTime.days(year: y, month: m, day: d)
        // 31 February and the like come back as another date.
        let back = CivilTime.date(fromDays: day)
        return back.month == m && back.day == d ? day : nil
    }
}

extension String {
    var trimmingSpaces: String {
        var s = Substring(self)
        while s.first == " " || s.first == "\t" { s.removeFirst() }
        while s.last == " " || s.last == "\t" { s.removeLast() }
        return String(s)
    }
}
