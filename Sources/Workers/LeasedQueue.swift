package import Logging
import ServiceLifecycle
import Synchronization

/// A durable queue worked under leases: each chore claimed for a while, made, and its outcome
/// stored; one that fails is due again after a backoff, for whichever process or instance next
/// finds it due, so a restart or another instance takes over where a worker stood. Google Play's
/// acknowledgements, the calls owed to the App Store Server API and mass extensions are worked
/// this way: each says how its chores are claimed and made, and ``pass()`` and ``run()`` are
/// written once, here.
package protocol LeasedQueue: Sendable {
    associatedtype Chore: Sendable
    /// The lease, the batch, the pace and the backoff.
    var leasing: LeasedQueueSettings { get }
    /// Rung when a chore is queued, so it is made now rather than at the next poll.
    var doorbell: Doorbell { get }
    /// Told of each pass.
    var quiescence: Quiescence { get }
    var logger: Logger { get }
    /// How the log names the queue when it cannot be read ("the App Store call queue").
    var queueName: String { get }
    /// In one transaction: the chores due now, at most `leasing.batch`, each leased for
    /// `leasing.leaseMs`.
    func claimDue() async throws -> [Chore]
    /// Makes one claimed chore and stores its outcome: done, due again, or dropped.
    func make(_ chore: Chore) async
    /// After every pass that could read the queue (the backlog's gauges).
    func passEnded() async
    /// Whether a pass makes the chores it claimed at once (the default) or one after another
    /// (a chore that itself calls out many times at once, as a mass extension's refresh does).
    static var makesChoresAtOnce: Bool { get }
}

extension LeasedQueue {
    package static var makesChoresAtOnce: Bool { true }

    /// Claims what is due and makes each chore (at once, unless ``makesChoresAtOnce`` says not),
    /// then ``passEnded()``. The number claimed.
    @discardableResult
    package func pass() async -> Int {
        let chores: [Chore]
        do {
            chores = try await claimDue()
        } catch {
            logger.error("\(queueName) could not be read", metadata: ["error": "\(error)"])
            return 0
        }
        if Self.makesChoresAtOnce {
            await withDiscardingTaskGroup { group in
                for chore in chores { group.addTask { await make(chore) } }
            }
        } else {
            for chore in chores { await make(chore) }
        }
        await passEnded()
        return chores.count
    }

    /// Works the queue until graceful shutdown (``LeasedQueueSettings/work(ringing:quiescence:_:)``).
    package func run() async { await leasing.work(ringing: doorbell, quiescence: quiescence, pass) }
}

/// How a ``LeasedQueue`` is worked.
package struct LeasedQueueSettings: Sendable, Equatable {
    /// How long after a failure the first retry waits; each further failure doubles it.
    package var retryBaseMs: Int64
    package var retryMaxMs: Int64
    /// How often the queue is looked at when nothing rings.
    package var pollMs: Int64
    /// How long a claim holds a chore: past it, another worker may make it.
    package var leaseMs: Int64
    /// Chores made at once.
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

    /// Works a queue until graceful shutdown: a pass, then, unless it found a full batch (more
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
