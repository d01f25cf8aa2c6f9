/// When a webhook delivery that was not acknowledged is tried again, and when it is given up on.
/// Pure: the caller gives the time and the random draw.
///
/// The n-th failed attempt waits `firstDelay · 2^(n-1)`, at most `maxDelay`, drawn in its upper
/// half (equal jitter: retries of many deliveries that failed together spread out). Attempts stop
/// `giveUpAfter` after the first one: the last is made at that instant, and if it fails too the
/// delivery is kept as failed.
package struct WebhookRetryPolicy: Sendable, Equatable {
    package var firstDelayMs: Int64 = 30_000
    package var maxDelayMs: Int64 = 6 * 3_600_000
    package var giveUpAfterMs: Int64 = 3 * 86_400_000

    package init(firstDelayMs: Int64 = 30_000, maxDelayMs: Int64 = 6 * 3_600_000, giveUpAfterMs: Int64 = 3 * 86_400_000) {
        self.firstDelayMs = firstDelayMs
        self.maxDelayMs = maxDelayMs
        self.giveUpAfterMs = giveUpAfterMs
    }

    /// The delay after failed attempt number `attempt` (from 1), before jitter.
    package func delay(afterAttempt attempt: Int) -> Int64 {
        var delay = firstDelayMs
        for _ in 1..<max(1, attempt) {
            guard delay < maxDelayMs else { break }
            delay *= 2
        }
        return min(delay, maxDelayMs)
    }

    /// When to try again after failed attempt `attempt` made at `now`, the window having begun at
    /// `firstAttemptAt`; nil: give up. `random` is in `0..<1`.
    package func retryAt(afterAttempt attempt: Int, firstAttemptAt: Int64, now: Int64, random: Double) -> Int64? {
        let deadline = firstAttemptAt + giveUpAfterMs
        guard now < deadline else { return nil }
        let full = delay(afterAttempt: attempt)
        let jittered = full - Int64(Double(full / 2) * min(max(random, 0), 1))
        return min(now + max(1, jittered), deadline)
    }
}
