package import Clocks
package import CoreMetrics
package import CurlTransport
package import DatabaseEngine
package import Logging
import ServiceLifecycle
import Storage
import Synchronization
package import Workers

/// Sends the outbox's deliveries (a Service; idle when no endpoint is configured).
///
/// Each endpoint has at most `maxConcurrent` requests in flight, made by as many senders, which
/// take claims from the endpoint's lane: a pass claims up to ``claimsAheadPerSender`` per sender
/// ahead, so senders keep going while the next pass waits for the writer. A claim takes only the head of
/// each subscriber's queue (``WebhookStore/claim(endpoint:limit:token:now:leaseUntil:)``), so one
/// subscriber's deliveries go out in version order while different subscribers' go in parallel.
/// A 2xx answer is delivered; any other answer, or none within the endpoint's timeout, is tried
/// again by ``WebhookRetryPolicy``, then kept as failed. A claim is a lease: a process killed
/// mid-send, or before it recorded the answer, leaves deliveries that fall due again when it runs
/// out (at least once; never sent by two processes at once while a lease holds).
///
/// The loop makes passes. Each is one write (one turn of the database's single writer, which the
/// requests' saves are queueing for too): it records what came of the attempts that ended since
/// the last pass (which lets the next delivery of each finished queue fall due), then claims what
/// is due into the slots they freed. Between passes it waits for its ``Doorbell`` (rung by this
/// process's writes that queued deliveries and by each ended attempt) or `pollMs` (other
/// processes' writes, retries falling due). On graceful shutdown it stops claiming, lets the
/// attempts under way end and records them.
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
    /// Per endpoint: its claims not yet sent and its senders.
    private let lanes = Mutex<[String: Lane]>([:])
    /// Attempts that ended and whose outcome the next pass records.
    private let ended = Mutex<[Ended]>([])
    private let lastPrune = Atomic<Int64>(0)
    private let lastBacklog = Atomic<Int64>(0)
    /// Told of each pass: who waits for the outbox to go quiet (a test) waits on it.
    package let quiescence = Quiescence()

    /// How many claims per sender of an endpoint a pass may take ahead of the senders.
    static let claimsAheadPerSender = 4

    /// One endpoint's claims on their way.
    struct Lane {
        /// Claimed, waiting for a sender, with when each claim runs out.
        var ready: [(claim: WebhookClaim, leaseUntil: Int64)] = []
        /// Senders running (at most the endpoint's `maxConcurrent`).
        var senders = 0
        /// Claimed and not yet ended (waiting or being sent).
        var outstanding = 0
    }

    /// An attempt whose answer (or its absence) is in, not yet recorded.
    struct Ended {
        var claim: WebhookClaim
        var endpoint: String
        var outcome: WebhookAttemptOutcome
        var at: Int64
    }

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
        defer { quiescence.stop() }
        guard !settings.endpoints.isEmpty else {
            try? await gracefulShutdown()
            return
        }
        let stopping = Atomic<Bool>(false)
        await withGracefulShutdownHandler {
            await withDiscardingTaskGroup { attempts in
                while !stopping.load(ordering: .acquiring) && !Task.isCancelled {
                    for endpoint in await pass(claiming: true) {
                        attempts.addTask { [self] in await send(to: endpoint) }
                    }
                    await housekeeping()
                    // Until a ring, or the poll interval (real time, whatever clock the test moves:
                    // due times are wall-clock times, read again at each pass).
                    await doorbell.wait(atMost: .milliseconds(settings.pollMs))
                }
            }
            // Every claim taken has been sent and every attempt has ended: record the last of them.
            _ = await pass(claiming: false)
        } onGracefulShutdown: { [doorbell] in
            stopping.store(true, ordering: .releasing)
            doorbell.ring()
        }
    }

    /// One pass, in one write: records the attempts that ended, then (`claiming`) claims what is
    /// due for each endpoint whose lane has room. Returns an endpoint for each sender to start.
    func pass(claiming: Bool) async -> [WebhookEndpoint] {
        let number = quiescence.passBegins()
        let finished = ended.withLock { ended in
            defer { ended = [] }
            return ended
        }
        let now = clock.now()
        var rooms: [(endpoint: WebhookEndpoint, room: Int, leaseUntil: Int64)] = []
        if claiming {
            let lanes = self.lanes.withLock { $0 }
            for endpoint in settings.endpoints {
                let room = endpoint.maxConcurrent * Self.claimsAheadPerSender - lanes[endpoint.name, default: Lane()].outstanding
                guard room > 0 else { continue }
                let leaseUntil = now + endpoint.timeoutMs + settings.leaseMs
                rooms.append((endpoint, room, leaseUntil))
            }
        }
        guard !finished.isEmpty || !rooms.isEmpty else {
            quiescence.passEnded(number, quiet: finished.isEmpty && isIdle())
            return []
        }
        let recorded: [Bool]
        let claims: [[WebhookClaim]]
        do {
            (recorded, claims) = try await database.write { [token, rooms] db in
                let store = WebhookStore(db)
                let recorded = try finished.map { try store.finish($0.claim, token: token, outcome: $0.outcome, now: $0.at) }
                let claims = try rooms.map {
                    try store.claim(endpoint: $0.endpoint.name, limit: $0.room, token: token, now: now, leaseUntil: $0.leaseUntil)
                }
                return (recorded, claims)
            }
        } catch {
            // The outcomes' claims run out and those deliveries are tried again: at least once.
            logger.error("webhook pass failed", metadata: ["attempts_ended": "\(finished.count)", "error": "\(error)"])
            (recorded, claims) = (finished.map { _ in false }, [])
        }
        for (attempt, stored) in zip(finished, recorded) { report(attempt, recorded: stored) }
        var senders: [WebhookEndpoint] = []
        for ((endpoint, _, leaseUntil), claimed) in zip(rooms, claims) where !claimed.isEmpty {
            let start = lanes.withLock { lanes in
                lanes[endpoint.name, default: Lane()].ready += claimed.map { ($0, leaseUntil) }
                lanes[endpoint.name, default: Lane()].outstanding += claimed.count
                let lane = lanes[endpoint.name, default: Lane()]
                let start = min(endpoint.maxConcurrent - lane.senders, lane.ready.count)
                lanes[endpoint.name, default: Lane()].senders += start
                return start
            }
            senders += repeatElement(endpoint, count: start)
        }
        quiescence.passEnded(number, quiet: finished.isEmpty && claims.allSatisfy(\.isEmpty) && isIdle())
        return senders
    }

    /// Nothing claimed is waiting, being sent or waiting to be recorded. (An attempt adds its outcome
    /// before it leaves its lane, so no outstanding claim means every outcome is in `ended`.)
    private func isIdle() -> Bool {
        lanes.withLock { $0.values.allSatisfy { $0.outstanding == 0 } } && ended.withLock { $0.isEmpty }
    }

    /// A sender: attempts the endpoint's waiting claims one after another until its lane is empty.
    /// A claim that would run out before its attempt could time out is left alone: it falls due
    /// again when it runs out, so no one else sends it while this process still might.
    func send(to endpoint: WebhookEndpoint) async {
        while let (claim, leaseUntil) = lanes.withLock({ lanes -> (WebhookClaim, Int64)? in
            guard !lanes[endpoint.name, default: Lane()].ready.isEmpty else {
                lanes[endpoint.name, default: Lane()].senders -= 1
                return nil
            }
            return lanes[endpoint.name, default: Lane()].ready.removeFirst()
        }) {
            guard clock.now() + endpoint.timeoutMs < leaseUntil else {
                lanes.withLock { $0[endpoint.name, default: Lane()].outstanding -= 1 }
                continue
            }
            await attempt(claim, to: endpoint)
        }
    }

    /// Sends one claimed delivery and leaves what came of it for the next pass to record.
    func attempt(_ claim: WebhookClaim, to endpoint: WebhookEndpoint) async {
        let body = Array(claim.body.utf8)
        let sentAt = clock.now()
        var headers = [
            "Receiptd-Signature: " + WebhookSignature.header(body: body, secrets: endpoint.secrets, timestamp: sentAt / 1000),
            "Receiptd-Webhook-Id: \(claim.messageID)", "Receiptd-Delivery-Attempt: \(claim.attempt)",
            "User-Agent: receiptd-webhooks",
        ]
        if endpoint.standardWebhooks {
            headers += StandardWebhooksSignature.headers(
                id: claim.messageID, timestamp: sentAt / 1000, body: body, secrets: endpoint.secrets)
        }
        let request = OutboundRequest(method: .post, url: endpoint.url, headers: headers, body: body, timeout: endpoint.timeout)
        let started = monotonic.now
        let result = await transport.send(request)
        let elapsed = monotonic.now - started
        let now = clock.now()
        let outcome = Self.outcome(of: result, claim: claim, policy: settings.retry, now: now, random: random())
        Timer(label: "webhook_delivery_duration_seconds", dimensions: [("endpoint", endpoint.name)], factory: metrics)
            .recordNanoseconds(elapsed.components.seconds * 1_000_000_000 + elapsed.components.attoseconds / 1_000_000_000)
        ended.withLock { $0.append(Ended(claim: claim, endpoint: endpoint.name, outcome: outcome, at: now)) }
        lanes.withLock { $0[endpoint.name, default: Lane()].outstanding -= 1 }
        doorbell.ring()
    }

    /// Counts and logs an attempt once its pass has recorded it (`recorded` false: the claim had
    /// run out and was someone else's, or the write failed).
    private func report(_ attempt: Ended, recorded: Bool) {
        let (claim, outcome) = (attempt.claim, attempt.outcome)
        let name =
            switch outcome.next {
            case .delivered: "delivered"
            case .retry: "retry"
            case .failed: "failed"
            }
        Counter(
            label: "webhook_deliveries_total",
            dimensions: [("endpoint", attempt.endpoint), ("outcome", recorded ? name : "lost_claim")],
            factory: metrics
        ).increment()
        guard outcome.next != .delivered else { return }
        logger.log(
            level: outcome.next == .failed ? .error : .warning,
            outcome.next == .failed ? "webhook delivery failed for good" : "webhook delivery will be retried",
            metadata: [
                "endpoint": "\(attempt.endpoint)", "delivery": "\(claim.deliveryID)", "webhook_id": "\(claim.messageID)",
                "attempt": "\(claim.attempt)", "status": "\(outcome.httpStatus.map(String.init) ?? "none")",
                "error": "\(outcome.error ?? "")",
            ])
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
