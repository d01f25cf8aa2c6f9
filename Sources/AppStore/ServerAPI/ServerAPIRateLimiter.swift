package import Entitlements
import Identifiers
import Synchronization

/// A token bucket, pure: `rate` tokens a second up to `burst`; time comes in as an argument.
package struct TokenBucket: Sendable, Equatable {
    package let rate: Double
    package let burst: Double
    private var tokens: Double
    private var updated: Duration
    /// No token before this instant (Apple's `Retry-After`).
    private var notBefore: Duration = .zero

    package init(rate: Double, burst: Double, now: Duration) {
        self.rate = rate
        self.burst = burst
        self.tokens = burst
        self.updated = now
    }

    /// Takes a token, possibly one not yet earned: the wait until it is (zero when one was there).
    /// Callers that wait the answer before sending keep the rate; the debt is repaid as time passes.
    package mutating func take(now: Duration) -> Duration {
        refill(now)
        tokens -= 1
        let untilEarned = tokens >= 0 ? Duration.zero : .seconds(-tokens / rate)
        return max(untilEarned, notBefore - now)
    }

    /// Nothing is handed out before `instant` (a 429's `Retry-After`).
    package mutating func hold(until instant: Duration) {
        notBefore = max(notBefore, instant)
    }

    private mutating func refill(_ now: Duration) {
        guard now > updated else { return }
        let elapsed = Double((now - updated).components.seconds) + Double((now - updated).components.attoseconds) / 1e18
        tokens = min(burst, tokens + elapsed * rate)
        updated = now
    }
}

/// Keeps receiptd under Apple's published limits: one bucket per app, endpoint and environment,
/// at Apple's rate (a tenth in sandbox) with a second's burst. Per process: several instances
/// share Apple's limit between them (Docs/app-store.md says so).
package final class ServerAPIRateLimiter: Sendable {
    struct Key: Hashable, Sendable {
        var bundleID: Identifier
        var endpoint: ServerAPIEndpoint
        var environment: StoreEnvironment
    }

    /// Scales every limit (1: Apple's; tests and shared deployments lower it).
    package let share: Double
    private let buckets = Mutex<[Key: TokenBucket]>([:])

    package init(share: Double = 1) {
        self.share = share
    }

    /// The wait before sending one request of `endpoint` for `bundleID` to `environment`.
    package func reserve(
        bundleID: String, endpoint: ServerAPIEndpoint, environment: StoreEnvironment, now: Duration
    ) -> Duration {
        let key = Key(bundleID: Identifier(bundleID), endpoint: endpoint, environment: environment)
        let rate = max(0.01, endpoint.limit(in: environment) * share)
        return buckets.withLock { all in
            all[key, default: TokenBucket(rate: rate, burst: max(1, rate.rounded(.down)), now: now)].take(now: now)
        }
    }

    /// Apple answered 429: nothing more of `endpoint` for `bundleID` in `environment` before `until`.
    package func hold(
        bundleID: String, endpoint: ServerAPIEndpoint, environment: StoreEnvironment, until: Duration, now: Duration
    ) {
        let key = Key(bundleID: Identifier(bundleID), endpoint: endpoint, environment: environment)
        let rate = max(0.01, endpoint.limit(in: environment) * share)
        buckets.withLock { all in
            all[key, default: TokenBucket(rate: rate, burst: max(1, rate.rounded(.down)), now: now)].hold(until: until)
        }
    }
}
