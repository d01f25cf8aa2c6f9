/// Bounds on one verification: how often, how long, and how far apart attempts may be.
package struct VerifyReceiptPolicy: Sendable, Equatable {
    /// Retries after the first send, not counting the one environment switch.
    package var maxRetries: Int
    /// The first retry waits about this long; each further retry doubles it, up to `maxDelay`.
    package var baseDelay: Duration
    package var maxDelay: Duration
    /// One HTTP exchange with Apple may take at most this long.
    package var attemptTimeout: Duration
    /// Everything, retries and the switch included, ends within this.
    package var deadline: Duration

    package init(
        maxRetries: Int = 3, baseDelay: Duration = .milliseconds(200), maxDelay: Duration = .seconds(2),
        attemptTimeout: Duration = .seconds(10), deadline: Duration = .seconds(20)
    ) {
        self.maxRetries = maxRetries
        self.baseDelay = baseDelay
        self.maxDelay = maxDelay
        self.attemptTimeout = attemptTimeout
        self.deadline = deadline
    }
}
