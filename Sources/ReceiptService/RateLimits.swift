import Identifiers
import Synchronization

/// Token buckets by key: each key may spend `burst` requests at once and earns `rate`
/// more per second. Pure: time is handed in (epoch ms). At most `maxKeys` buckets are kept; past
/// it, buckets that have refilled completely are forgotten (they would allow a burst anyway).
struct TokenBuckets: Sendable {
    let rate: Double
    let burst: Double
    let maxKeys: Int
    /// By the key's exact bytes (``Identifier``).
    private var buckets: [Identifier: (tokens: Double, at: Int64)] = [:]

    init(rate: Double, burst: Double, maxKeys: Int = 100_000) {
        self.rate = rate
        self.burst = burst
        self.maxKeys = maxKeys
    }

    /// Takes a token for `key`: nil when allowed, else the milliseconds until one is earned.
    mutating func take(_ key: String, now: Int64) -> Int64? {
        let key = Identifier(key)
        var (tokens, at) = buckets[key] ?? (burst, now)
        tokens = min(burst, tokens + Double(max(0, now - at)) / 1000 * rate)
        guard tokens >= 1 else {
            buckets[key] = (tokens, now)
            return Int64(((1 - tokens) / rate * 1000).rounded(.up))
        }
        buckets[key] = (tokens - 1, now)
        if buckets.count > maxKeys { forgetFull(now: now) }
        return nil
    }

    private mutating func forgetFull(now: Int64) {
        buckets = buckets.filter { _, b in b.tokens + Double(max(0, now - b.at)) / 1000 * rate < burst }
        if buckets.count > maxKeys { buckets.removeAll() }  // a flood of distinct keys: start over
    }

    var count: Int { buckets.count }
}

/// The limits on POST /v1/receipts: per API key and per client address.
package final class RateLimiter: Sendable {
    package struct Settings: Sendable, Equatable {
        /// Requests per second each API key may make, and its burst; 0 turns the limit off.
        package var perKey: Double = 0
        package var keyBurst: Double = 0
        /// Requests per second each client address may make, and its burst; 0 turns it off.
        package var perAddress: Double = 0
        package var addressBurst: Double = 0

        package init(perKey: Double = 0, keyBurst: Double = 0, perAddress: Double = 0, addressBurst: Double = 0) {
            self.perKey = perKey
            self.keyBurst = keyBurst
            self.perAddress = perAddress
            self.addressBurst = addressBurst
        }
    }

    private let byKey: Mutex<TokenBuckets>?
    private let byAddress: Mutex<TokenBuckets>?

    init(_ settings: Settings) {
        byKey = settings.perKey > 0 ? Mutex(TokenBuckets(rate: settings.perKey, burst: max(1, settings.keyBurst))) : nil
        byAddress =
            settings.perAddress > 0
            ? Mutex(TokenBuckets(rate: settings.perAddress, burst: max(1, settings.addressBurst))) : nil
    }

    /// Nil when the request may go on; else the seconds to wait (for `Retry-After`).
    func check(key: String, address: String, now: Int64) -> Int? {
        let waits = [byKey?.withLock { $0.take(key, now: now) }, byAddress?.withLock { $0.take(address, now: now) }]
        guard let wait = waits.compactMap({ $0 }).max() else { return nil }
        return max(1, Int((wait + 999) / 1000))
    }
}
