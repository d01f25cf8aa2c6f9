import ReceiptCore

extension Refresher.Settings {
    /// `refresher.*`: what is re-validated in the background, how fast, and the backoff.
    static func read(_ c: ConfigLoader) throws(ConfigurationError) -> Refresher.Settings {
        var refresher = Refresher.Settings(
            // Re-validate stored receipts of subscriptions that expired or are in billing retry or grace.
            enabled: try c.bool("refresher.enabled", default: true),
            // Time between scans for due subscriptions.
            intervalMs: Int64(try c.int("refresher.intervalMs", default: 60_000, range: 100...86_400_000)),
            // Most subscriptions refreshed per scan.
            batchSize: try c.int("refresher.batchSize", default: 100, range: 1...10_000),
            // Most refresher calls to Apple per second.
            maxPerSecond: Double(try c.int("refresher.maxPerSecond", default: 5, range: 1...1000)),
            // How long one refresher's claim on a subscription lasts (a killed process's claim runs out).
            leaseMs: Int64(try c.int("refresher.leaseMs", default: 600_000, range: 1000...86_400_000)))
        refresher.policy = RefreshPolicy(
            // Spread of the first check after an expiry.
            jitterMs: Int64(try c.int("refresher.jitterMs", default: 900_000, range: 0...86_400_000)),
            // How often a subscription in billing retry or grace is asked about again.
            billingRetryRecheckMs: Int64(
                try c.int("refresher.billingRetryRecheckMs", default: 21_600_000, range: 60_000...2_592_000_000)),
            // Expiries older than this many days are not chased.
            lookbackMs: Int64(try c.int("refresher.lookbackDays", default: 60, range: 1...3650)) * 86_400_000,
            // After Apple failed to answer: first wait, doubled per failure up to the maximum.
            backoffMs: Int64(try c.int("refresher.backoffMs", default: 60_000, range: 1000...86_400_000)),
            maxBackoffMs: Int64(try c.int("refresher.maxBackoffMs", default: 3_600_000, range: 1000...604_800_000)))
        return refresher
    }
}
