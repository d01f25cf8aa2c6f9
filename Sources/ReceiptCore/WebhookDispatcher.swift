import AppStore
import Clocks
import CoreMetrics
import Logging
import ServiceLifecycle
import Storage
import Synchronization

/// Sends the outbox's deliveries (a Service; idle when no endpoint is configured).
///
/// Each endpoint has at most `maxConcurrent` deliveries in flight. A claim takes only the head of
/// each subscriber's queue (``WebhookStore/claim(endpoint:limit:token:now:leaseUntil:)``), so one
/// subscriber's deliveries go out in version order while different subscribers' go in parallel.
/// A 2xx answer is delivered; any other answer, or none within the endpoint's timeout, is tried
/// again by ``WebhookRetryPolicy``, then kept as failed. A claim is a lease: a process killed
/// mid-send leaves deliveries that fall due again when it runs out (at least once; never sent by
/// two processes at once while a lease holds).
///
/// The loop claims what is due, then waits for its ``Doorbell`` (rung by this process's writes
/// that queued deliveries and by each finished attempt) or `pollMs` (other processes' writes,
/// retries falling due). On graceful shutdown it stops claiming and lets attempts under way end.
package final class WebhookDispatcher: Sendable {
    let settings: WebhookSettings
    let transport: any HTTPTransport
    let database: DatabaseQueue
    let doorbell: Doorbell
    let logger: Logger
    let clock: WallClock
    let monotonic: any MonotonicClock
    let metrics: any MetricsFactory
    /// Draws in `0..<1` for the retry jitter.
    let random: @Sendable () -> Double
    /// This process's claims (random, so a restarted process never holds its predecessor's).
    let token: String
    /// Attempts under way, per endpoint.
    private let inFlight = Mutex<[String: Int]>([:])
    private let lastPrune = Atomic<Int64>(0)
    private let lastBacklog = Atomic<Int64>(0)

    package init(
        settings: WebhookSettings, transport: any HTTPTransport, database: DatabaseQueue, doorbell: Doorbell, logger: Logger,
        clock: WallClock, monotonic: any MonotonicClock = SystemMonotonicClock(),
        metrics: any MetricsFactory = NOOPMetricsHandler.instance,
        random: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) }
    ) {
        self.settings = settings
        self.transport = transport
        self.database = database
        self.doorbell = doorbell
        self.logger = logger
        self.clock = clock
        self.monotonic = monotonic
        self.metrics = metrics
        self.random = random
        token = (0..<4).map { _ in String(UInt32.random(in: .min ... .max), radix: 16) }.joined()
    }

    package func run() async {
        guard !settings.endpoints.isEmpty else {
            try? await gracefulShutdown()
            return
        }
        let stopping = Atomic<Bool>(false)
        await withGracefulShutdownHandler {
            await withDiscardingTaskGroup { attempts in
                while !stopping.load(ordering: .acquiring) && !Task.isCancelled {
                    await dispatchDue(into: &attempts)
                    await housekeeping()
                    // Until a ring, or the poll interval (real time, whatever clock the test moves:
                    // due times are wall-clock times, read again at each pass).
                    await doorbell.wait(atMost: .milliseconds(settings.pollMs))
                }
            }
        } onGracefulShutdown: { [doorbell] in
            stopping.store(true, ordering: .releasing)
            doorbell.ring()
        }
    }

    /// Claims what is due for each endpoint with room, and starts each attempt in `attempts`.
    func dispatchDue(into attempts: inout DiscardingTaskGroup) async {
        for endpoint in settings.endpoints {
            let room = endpoint.maxConcurrent - inFlight.withLock { $0[endpoint.name, default: 0] }
            guard room > 0 else { continue }
            let now = clock.now()
            let leaseUntil = now + Int64(endpoint.timeout.components.seconds * 1000) + settings.leaseMs
            let claims: [WebhookClaim]
            do {
                claims = try await database.write { [token] db in
                    try WebhookStore(db).claim(
                        endpoint: endpoint.name, limit: room, token: token, now: now, leaseUntil: leaseUntil)
                }
            } catch {
                logger.error("webhook claim failed", metadata: ["endpoint": "\(endpoint.name)", "error": "\(error)"])
                continue
            }
            guard !claims.isEmpty else { continue }
            inFlight.withLock { $0[endpoint.name, default: 0] += claims.count }
            for claim in claims {
                attempts.addTask { [self] in
                    await attempt(claim, to: endpoint)
                    inFlight.withLock { $0[endpoint.name, default: 0] -= 1 }
                    doorbell.ring()
                }
            }
        }
    }

    /// Sends one claimed delivery and records what came of it.
    func attempt(_ claim: WebhookClaim, to endpoint: WebhookEndpoint) async {
        let body = Array(claim.body.utf8)
        let sentAt = clock.now()
        let request = OutboundRequest(
            method: .post, url: endpoint.url,
            headers: [
                "Receiptd-Signature: " + WebhookSignature.header(body: body, secrets: endpoint.secrets, timestamp: sentAt / 1000),
                "Receiptd-Webhook-Id: \(claim.messageID)", "Receiptd-Delivery-Attempt: \(claim.attempt)",
                "User-Agent: receiptd-webhooks",
            ],
            body: body, timeout: endpoint.timeout)
        let started = monotonic.now
        let result = await transport.send(request)
        let elapsed = monotonic.now - started
        let now = clock.now()
        let outcome = Self.outcome(
            of: result, claim: claim, policy: settings.retry, now: now, random: random())
        let recorded: Bool
        do {
            recorded = try await database.write { [token] db in
                try WebhookStore(db).finish(claim, token: token, outcome: outcome, now: now)
            }
        } catch {
            // The claim runs out and the delivery is tried again: at least once.
            logger.error("webhook outcome not stored", metadata: ["delivery": "\(claim.deliveryID)", "error": "\(error)"])
            recorded = false
        }
        let name =
            switch outcome.next {
            case .delivered: "delivered"
            case .retry: "retry"
            case .failed: "failed"
            }
        Counter(
            label: "webhook_deliveries_total",
            dimensions: [("endpoint", endpoint.name), ("outcome", recorded ? name : "lost_claim")],
            factory: metrics
        ).increment()
        Timer(label: "webhook_delivery_duration_seconds", dimensions: [("endpoint", endpoint.name)], factory: metrics)
            .recordNanoseconds(elapsed.components.seconds * 1_000_000_000 + elapsed.components.attoseconds / 1_000_000_000)
        if outcome.next != .delivered {
            logger.log(
                level: outcome.next == .failed ? .error : .warning,
                outcome.next == .failed ? "webhook delivery failed for good" : "webhook delivery will be retried",
                metadata: [
                    "endpoint": "\(endpoint.name)", "delivery": "\(claim.deliveryID)", "webhook_id": "\(claim.messageID)",
                    "attempt": "\(claim.attempt)", "status": "\(outcome.httpStatus.map(String.init) ?? "none")",
                    "error": "\(outcome.error ?? "")",
                ])
        }
    }

    /// What an attempt's result means: 2xx is delivered; anything else is retried, or failed once
    /// the policy gives up.
    static func outcome(
        of result: TransportResult, claim: WebhookClaim, policy: WebhookRetryPolicy, now: Int64, random: Double
    ) -> WebhookAttemptOutcome {
        let status: Int?
        let error: String?
        switch result {
        case .response(let code, _, _) where (200..<300).contains(code):
            return WebhookAttemptOutcome(next: .delivered, httpStatus: code, error: nil)
        case .response(let code, _, _): (status, error) = (code, "HTTP \(code)")
        case .failure(let reason): (status, error) = (nil, reason)
        }
        let next = policy.retryAt(afterAttempt: claim.attempt, firstAttemptAt: claim.firstAttemptAt, now: now, random: random)
        return WebhookAttemptOutcome(next: next.map { .retry(at: $0) } ?? .failed, httpStatus: status, error: error)
    }

    /// Every few seconds the backlog gauges; every hour, what is past retention goes.
    func housekeeping() async {
        let now = clock.now()
        if now - lastBacklog.load(ordering: .relaxed) >= 5_000 {
            lastBacklog.store(now, ordering: .relaxed)
            if let backlog = try? await database.read({ db in try WebhookStore(db).backlog() }) {
                for endpoint in settings.endpoints {
                    let (pending, oldest) = backlog[endpoint.name] ?? (0, now)
                    Gauge(label: "webhook_backlog", dimensions: [("endpoint", endpoint.name)], factory: metrics)
                        .record(Int64(pending))
                    Gauge(label: "webhook_oldest_pending_seconds", dimensions: [("endpoint", endpoint.name)], factory: metrics)
                        .record(Double(max(0, now - oldest)) / 1000)
                }
            }
        }
        guard now - lastPrune.load(ordering: .relaxed) >= 3_600_000 else { return }
        lastPrune.store(now, ordering: .relaxed)
        do {
            var pruned = 0
            while true {
                let deleted = try await database.write { [settings] db in
                    try WebhookStore(db).prune(before: now - settings.retentionMs)
                }
                pruned += deleted
                if deleted < 1_000 { break }
            }
            if pruned > 0 { logger.info("webhook deliveries past retention deleted", metadata: ["deliveries": "\(pruned)"]) }
        } catch {
            logger.error("webhook pruning failed", metadata: ["error": "\(error)"])
        }
    }
}

extension WebhookDispatcher: Service {}
