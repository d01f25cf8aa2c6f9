/// Exact arithmetic on amounts held as integer milliunits (Apple's unit: 9.99 is 9990). Every
/// product and quotient is taken in 128 bits and rounded once, half to even; nothing here ever
/// goes through binary floating point.
package enum Money {
    /// `amount × numerator ÷ denominator`, rounded half to even. `denominator` is positive.
    package static func scale(_ amount: Int64, by numerator: Int128, over denominator: Int128) -> Int64 {
        precondition(denominator > 0, "a positive denominator")
        let product = Int128(amount) * numerator
        let (quotient, r) = product.quotientAndRemainder(dividingBy: denominator)
        var q = quotient
        // Round the remainder's magnitude against half the denominator.
        let twice = (r < 0 ? -r : r) * 2
        if twice > denominator || (twice == denominator && q % 2 != 0) { q += product < 0 ? -1 : 1 }
        return Int64(clamping: q)
    }

    /// Milliunits as decimal text with three places: 9990 → `9.990`, -5 → `-0.005`.
    package static func text(_ milliunits: Int64) -> String {
        var text = ""
        withText(milliunits) { text = String(decoding: $0, as: UTF8.self) }
        return text
    }

    /// ``text(_:)``'s UTF-8 bytes, made on the stack and handed to `body`.
    package static func withText(_ milliunits: Int64, _ body: (UnsafeBufferPointer<UInt8>) -> Void) {
        withFixed(milliunits, places: 3, body)
    }

    /// A non-negative decimal (`1.0823`, `158`, `0.85138`) as an integer of `places` decimal
    /// places (1082300 for 6); nil for anything else or a value with more places.
    package static func decimal(_ text: String, places: Int) -> Int64? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count), let whole = parts.first, !whole.isEmpty, whole.count <= 12,
            whole.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 })
        else { return nil }
        let fraction = parts.count == 2 ? parts[1] : ""
        guard fraction.count <= places, fraction.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
            parts.count == 1 || !fraction.isEmpty
        else { return nil }
        let padded = fraction + String(repeating: "0", count: places - fraction.count)
        return Int64(whole + padded)
    }

    /// `numerator ÷ denominator` as decimal text with four places (`0.2500`); nil when the
    /// denominator is 0.
    package static func ratio(_ numerator: Int64, _ denominator: Int64) -> String? {
        var text: String?
        withRatio(numerator, denominator) { text = String(decoding: $0, as: UTF8.self) }
        return text
    }

    /// ``ratio(_:_:)``'s UTF-8 bytes, made on the stack and handed to `body`; false (and `body`
    /// not called) when the denominator is 0.
    @discardableResult
    package static func withRatio(_ numerator: Int64, _ denominator: Int64, _ body: (UnsafeBufferPointer<UInt8>) -> Void)
        -> Bool
    {
        guard denominator != 0 else { return false }
        let tenThousandths = scale(numerator, by: 10_000, over: Int128(denominator.magnitude)) * (denominator < 0 ? -1 : 1)
        withFixed(tenThousandths, places: 4, body)
        return true
    }

    /// An integer of `places` decimal places as decimal text, every place written (-5 of 3
    /// places is `-0.005`), made on the stack and handed to `body`: a cohort chart by day writes
    /// half a million of these, straight into its answer.
    package static func withFixed(_ scaled: Int64, places: Int, _ body: (UnsafeBufferPointer<UInt8>) -> Void) {
        // A sign, 19 digits, a point and up to 19 places of leading zeros at most.
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 40) { buffer in
            var magnitude = scaled.magnitude
            var i = 40
            func put(_ byte: UInt8) {
                i -= 1
                buffer[i] = byte
            }
            for _ in 0..<places {
                put(UInt8(ascii: "0") + UInt8(magnitude % 10))
                magnitude /= 10
            }
            put(UInt8(ascii: "."))
            repeat {
                put(UInt8(ascii: "0") + UInt8(magnitude % 10))
                magnitude /= 10
            } while magnitude > 0
            if scaled < 0 { put(UInt8(ascii: "-")) }
            body(UnsafeBufferPointer(rebasing: buffer[i...]))
        }
    }
}
