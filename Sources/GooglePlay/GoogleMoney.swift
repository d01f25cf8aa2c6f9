package import JSON

/// Google's `Money` (google.type.Money): whole `units` and `nanos` (billionths) of a currency,
/// as a price arrives from the Play Developer API. receiptd keeps amounts in integer milliunits,
/// so a price is taken only when it is exact in them: 9.99 (`units` 9, `nanos` 990000000) is
/// 9990; an amount with a digit past the thousandth is refused rather than rounded.
package struct GoogleMoney: Sendable, Equatable {
    /// ISO 4217, e.g. `EUR`.
    package var currency: String
    /// Thousandths of the currency's unit.
    package var milliunits: Int64

    package init(currency: String, milliunits: Int64) {
        self.currency = currency
        self.milliunits = milliunits
    }

    /// Reads `{"currencyCode", "units", "nanos"}` (units an int64 as a string or number; `nanos`
    /// of the same sign as `units`). Nil when a member is missing or wrong, or the amount is not
    /// exact in milliunits.
    package init?(_ value: JSONValue) {
        guard let currency = value["currencyCode"]?.string, currency.utf8.count == 3,
            currency.utf8.allSatisfy({ $0 >= 0x41 && $0 <= 0x5A })
        else { return nil }
        let units = value["units"].map { $0.int64 } ?? 0
        let nanos = value["nanos"].map { $0.int64 } ?? 0
        guard let units, let nanos, abs(nanos) < 1_000_000_000, nanos % 1_000_000 == 0,
            units == 0 || nanos == 0 || (units > 0) == (nanos > 0)
        else { return nil }
        let (scaled, overflow) = units.multipliedReportingOverflow(by: 1_000)
        guard !overflow else { return nil }
        let (sum, overflowed) = scaled.addingReportingOverflow(nanos / 1_000_000)
        guard !overflowed else { return nil }
        self.currency = currency
        self.milliunits = sum
    }
}
