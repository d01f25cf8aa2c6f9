import AppStore
import Storage

/// When a stored subscription should be asked about again (the seeds' advice: keep the latest
/// receipt, ask Apple again when a subscription reaches its expiry). Pure: times in epoch ms.
package struct RefreshPolicy: Sendable, Equatable {
    /// Spread over this window after the expiry, by a hash of the subscription (the same after a
    /// restart), so a wave of renewals does not become a wave of calls.
    package var jitterMs: Int64 = 900_000
    /// In billing retry or grace Apple may recover the payment at any moment: asked again this often.
    package var billingRetryRecheckMs: Int64 = 21_600_000
    /// Expiries older than this are not chased (a subscription lapsed long before receiptd ran).
    package var lookbackMs: Int64 = 60 * 86_400_000
    /// After Apple failed to answer: the first wait, doubled per failure up to the maximum.
    package var backoffMs: Int64 = 60_000
    package var maxBackoffMs: Int64 = 3_600_000

    package init(
        jitterMs: Int64 = 900_000, billingRetryRecheckMs: Int64 = 21_600_000, lookbackMs: Int64 = 60 * 86_400_000,
        backoffMs: Int64 = 60_000, maxBackoffMs: Int64 = 3_600_000
    ) {
        self.jitterMs = jitterMs
        self.billingRetryRecheckMs = billingRetryRecheckMs
        self.lookbackMs = lookbackMs
        self.backoffMs = backoffMs
        self.maxBackoffMs = maxBackoffMs
    }

    /// Whether `c`'s stored times are dates the policy can reason about (``AppleDate/range``). A
    /// row written before dates were checked on entry, or by hand, may hold anything; the
    /// refresher skips and reports such a row instead of doing arithmetic on it.
    static func isProcessable(_ c: RefreshCandidate) -> Bool {
        [c.expiresAt, c.gracePeriodExpiresAt, c.lastCheckedAt, c.nextAttemptAt].allSatisfy {
            $0.map(AppleDate.range.contains) ?? true
        } && (0...maxFailures).contains(c.failures)
    }

    /// More failures in a row than a century of hourly backoffs: not a count this code wrote.
    static let maxFailures = 1_000_000

    /// When `c` is due, or nil when there is nothing to learn. Saturating: whatever the row holds,
    /// no sum overflows (``isProcessable(_:)`` is checked first; this is the second line).
    func dueAt(_ c: RefreshCandidate) -> Int64? {
        let checked = c.lastCheckedAt ?? .min
        var due: Int64?
        // Expired since it was last checked: did it renew?
        if checked < c.expiresAt { due = c.expiresAt.saturatingAdd(jitter(c.originalTransactionID)) }
        // In grace: ask again when grace ends, if not checked since.
        if let grace = c.gracePeriodExpiresAt, checked < grace {
            due = min(due ?? .max, grace.saturatingAdd(jitter(c.originalTransactionID)))
        }
        // Billing retry or grace: Apple may recover the payment any time.
        if c.inBillingRetry || c.gracePeriodExpiresAt != nil {
            due = min(due ?? .max, max(checked, c.expiresAt).saturatingAdd(billingRetryRecheckMs))
        }
        guard var due else { return nil }
        if let next = c.nextAttemptAt { due = max(due, next) }
        return due
    }

    /// The wait after `failures` attempts in a row that Apple did not answer.
    func backoff(failures: Int) -> Int64 {
        let shift = min(max(failures - 1, 0), 30)
        return min(maxBackoffMs, backoffMs << Int64(shift))
    }

    /// 0 ..< jitterMs, from FNV-1a of the id: stable across restarts and processes.
    func jitter(_ original: String) -> Int64 {
        guard jitterMs > 0 else { return 0 }
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in original.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        return Int64(hash % UInt64(jitterMs))
    }
}
