/// SplitMix64: a seeded random generator for property tests, so a failure names the seed that
/// shows it and the same seed shows it again. Inlinable: property tests draw millions of numbers.
package struct SeededGenerator: RandomNumberGenerator {
    @usableFromInline var state: UInt64

    package init(seed: UInt64) { state = seed }

    @inlinable package mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
