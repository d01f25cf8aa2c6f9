import ServiceLifecycle
import Synchronization

/// How a durable queue of calls owed to a store is worked (Google Play's acknowledgements,
/// ``AcknowledgePlayPurchases``; the App Store Server API's, ``AppStoreCalls``): each call
/// claimed under a lease, made, and marked done; one that fails tried again with exponential
/// backoff, by whichever process or instance next finds it due.
package struct CallQueueSettings: Sendable, Equatable {
    /// How long after a failure the first retry waits; each further failure doubles it.
    package var retryBaseMs: Int64
    package var retryMaxMs: Int64
    /// How often the queue is looked at when nothing rings.
    package var pollMs: Int64
    /// How long a claim holds a call: past it, another worker may make it.
    package var leaseMs: Int64
    /// Calls made at once.
    package var batch: Int

    package init(
        retryBaseMs: Int64 = 30_000, retryMaxMs: Int64 = 3_600_000, pollMs: Int64 = 10_000, leaseMs: Int64 = 120_000,
        batch: Int = 20
    ) {
        self.retryBaseMs = retryBaseMs
        self.retryMaxMs = retryMaxMs
        self.pollMs = pollMs
        self.leaseMs = leaseMs
        self.batch = batch
    }

    /// `base · 2^attempts`, at most `max`.
    package func backoff(attempts: Int) -> Int64 {
        let shift = min(attempts, 30)
        let (scaled, overflow) = retryBaseMs.multipliedReportingOverflow(by: Int64(1) << shift)
        return overflow ? retryMaxMs : min(scaled, retryMaxMs)
    }

    /// Works the queue until graceful shutdown: a pass, then, unless it found a full batch (more
    /// may be due now), a wait of at most `pollMs` for `doorbell`. A pass that found nothing due is
    /// quiet (`quiescence`).
    package func work(ringing doorbell: Doorbell, quiescence: Quiescence, _ pass: () async -> Int) async {
        let stopping = Atomic<Bool>(false)
        defer { quiescence.stop() }
        await withGracefulShutdownHandler {
            while !stopping.load(ordering: .acquiring) && !Task.isCancelled {
                let number = quiescence.passBegins()
                let done = await pass()
                quiescence.passEnded(number, quiet: done == 0)
                if done < batch { await doorbell.wait(atMost: .milliseconds(pollMs)) }
            }
        } onGracefulShutdown: {
            stopping.store(true, ordering: .releasing)
            doorbell.ring()
        }
    }
}
