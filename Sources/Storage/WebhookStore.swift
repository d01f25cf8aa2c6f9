package import DatabaseEngine

/// The webhook outbox (Migrations/0010_webhooks.sql): messages, their deliveries to each endpoint,
/// the claims that send them and what came of each attempt. Synchronous: use it inside
/// `DatabaseQueue.write` or `read`; ``enqueue(_:to:now:)`` in the transaction that recorded the event.
package struct WebhookStore {
    private let db: Database

    package init(_ database: Database) { db = database }

    // MARK: Writing the outbox

    /// Stores `message` and one pending delivery of it per endpoint in `endpoints`, in the caller's
    /// transaction. Each delivery joins the back of its (endpoint, subscriber) queue: due now when
    /// the queue was empty, else waiting behind it. A message already stored (an event recorded
    /// again after it vanished) is not sent again: 0.
    @discardableResult
    package func enqueue(_ message: WebhookMessage, to endpoints: [String], now: Int64) throws -> Int {
        guard !endpoints.isEmpty else { return 0 }
        try db.cached(
            """
            INSERT INTO webhook_messages (id, app_user_id, version, type, bundle_id, body, created_at)
            VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING
            """
        ).bind([
            message.id, message.appUserID, message.version, message.type, message.bundleID, message.body, message.createdAt,
        ]).run()
        guard db.changes > 0 else { return 0 }
        for endpoint in endpoints { try queue(message.id, endpoint: endpoint, appUserID: message.appUserID, now: now) }
        return endpoints.count
    }

    /// Appends a pending delivery of `messageID` to the (endpoint, subscriber) queue. (The cast
    /// tells PostgreSQL the parameter's type, which a CASE of NULL and it does not.)
    private func queue(_ messageID: String, endpoint: String, appUserID: String, now: Int64) throws {
        try lockQueue(endpoint: endpoint, appUserID: appUserID)
        try db.cached(
            """
            INSERT INTO webhook_deliveries (message_id, endpoint, app_user_id, status, due_at, created_at)
            VALUES (?1, ?2, ?3, 'pending',
                CASE WHEN EXISTS (SELECT 1 FROM webhook_deliveries WHERE endpoint = ?2 AND app_user_id = ?3 AND status = 'pending')
                THEN NULL ELSE CAST(?4 AS BIGINT) END, ?4)
            """
        ).bind([messageID, endpoint, appUserID, now]).run()
    }

    // MARK: Sending

    /// Claims up to `limit` deliveries to `endpoint` that are due at `now` (the head of each of their
    /// subscribers' queues), for `token` until `leaseUntil`: until then no other claim takes them.
    /// Oldest due first. Call inside a write transaction: on PostgreSQL, where instances claim at
    /// once, the rows another claim is taking are skipped (`FOR UPDATE SKIP LOCKED`), so two
    /// instances never send one delivery at once.
    package func claim(endpoint: String, limit: Int, token: String, now: Int64, leaseUntil: Int64) throws -> [WebhookClaim] {
        let due = try db.cached(
            """
            SELECT d.id, d.message_id, d.app_user_id, d.attempts, d.first_attempt_at, m.body
            FROM webhook_deliveries d JOIN webhook_messages m ON m.id = d.message_id
            WHERE d.endpoint = ? AND d.status = 'pending' AND d.due_at IS NOT NULL AND d.due_at <= ?
            ORDER BY d.due_at, d.id LIMIT ?\(skipLocked)
            """
        ).bind([endpoint, now, Int64(limit)])
        var claims: [WebhookClaim] = []
        while try due.step() {
            claims.append(
                WebhookClaim(
                    deliveryID: due.int(0), messageID: due.text(1)!, endpoint: endpoint, appUserID: due.text(2)!,
                    attempt: Int(due.int(3)) + 1, firstAttemptAt: due.optionalInt(4) ?? now, body: due.text(5)!))
        }
        let lease = try db.cached(
            """
            UPDATE webhook_deliveries SET claimed_by = ?, due_at = ?, attempts = attempts + 1,
                first_attempt_at = coalesce(first_attempt_at, ?), last_attempt_at = ?
            WHERE id = ?
            """)
        for c in claims { try lease.bind([token, leaseUntil, now, now, c.deliveryID]).run() }
        return claims
    }

    /// Records what came of a claimed attempt, if `token` still holds the claim (a claim that ran
    /// out and was taken again is the new holder's): false when it does not. Delivered and failed
    /// end the delivery and let the next one of its subscriber's queue fall due at `now`.
    @discardableResult
    package func finish(_ claim: WebhookClaim, token: String, outcome: WebhookAttemptOutcome, now: Int64) throws -> Bool {
        let (status, dueAt, finishedAt): (String, Int64?, Int64?) =
            switch outcome.next {
            case .delivered: ("delivered", nil, now)
            case .retry(let at): ("pending", at, nil)
            case .failed: ("failed", nil, now)
            }
        try lockQueue(endpoint: claim.endpoint, appUserID: claim.appUserID)
        try db.cached(
            """
            UPDATE webhook_deliveries SET status = ?, due_at = ?, finished_at = ?, claimed_by = NULL, last_status = ?,
                last_error = ?
            WHERE id = ? AND claimed_by = ? AND status = 'pending'
            """
        ).bind([status, dueAt, finishedAt, outcome.httpStatus.map(Int64.init), outcome.error, claim.deliveryID, token]).run()
        guard db.changes > 0 else { return false }
        if finishedAt != nil { try promote(endpoint: claim.endpoint, appUserID: claim.appUserID, now: now) }
        return true
    }

    /// Makes writers of the same (endpoint, subscriber) queue wait for each other until the
    /// transaction ends (``Database/lock(_:)``; nothing on SQLite). A delivery joins the back of a
    /// queue by looking at it, and one ending promotes the next by looking at it: on PostgreSQL,
    /// unserialized, a delivery queued while the head was finishing on another connection saw the
    /// head still pending and waited behind it, and the head's promotion did not see it yet, so
    /// the queue had no head left and stopped.
    private func lockQueue(endpoint: String, appUserID: String) throws {
        try db.lock(["webhook-queue:" + endpoint + ":" + appUserID])
    }

    /// Makes the oldest waiting delivery of the (endpoint, subscriber) queue due at `now`, unless
    /// the queue has a head already.
    private func promote(endpoint: String, appUserID: String, now: Int64) throws {
        try db.cached(
            """
            UPDATE webhook_deliveries SET due_at = ?3
            WHERE id = (SELECT min(id) FROM webhook_deliveries WHERE endpoint = ?1 AND app_user_id = ?2 AND status = 'pending')
                AND due_at IS NULL
                AND NOT EXISTS (SELECT 1 FROM webhook_deliveries
                    WHERE endpoint = ?1 AND app_user_id = ?2 AND status = 'pending' AND due_at IS NOT NULL)
            """
        ).bind([endpoint, appUserID, now]).run()
    }

    /// The earliest time a delivery to `endpoint` falls due (a claimed one: when its lease runs out);
    /// nil when none is pending.
    package func nextDue(endpoint: String) throws -> Int64? {
        try db.cached(
            "SELECT min(due_at) FROM webhook_deliveries WHERE endpoint = ? AND status = 'pending' AND due_at IS NOT NULL"
        ).bind([endpoint]).firstInt()
    }

    // MARK: Operating

    /// Deliveries newest first, `limit` at a time below the id `before`, filtered by any of
    /// status, endpoint and subscriber.
    package func deliveries(
        status: WebhookDelivery.Status?, endpoint: String?, appUserID: String?, limit: Int, before: Int64? = nil
    ) throws -> [WebhookDelivery] {
        var conditions = ["d.id < ?"]
        var values: [(any StatementValue)?] = [before ?? Int64.max]
        if let status {
            conditions.append("d.status = ?")
            values.append(status.rawValue)
        }
        if let endpoint {
            conditions.append("d.endpoint = ?")
            values.append(endpoint)
        }
        if let appUserID {
            conditions.append("d.app_user_id = ?")
            values.append(appUserID)
        }
        let q = try db.cached(
            "SELECT \(Self.columns) FROM \(Self.joined) WHERE \(conditions.joined(separator: " AND ")) ORDER BY d.id DESC LIMIT ?"
        ).bind(values + [Int64(limit)])
        var rows: [WebhookDelivery] = []
        while try q.step() { rows.append(Self.delivery(q)) }
        return rows
    }

    /// One delivery; nil when unknown.
    package func delivery(_ id: Int64) throws -> WebhookDelivery? {
        let q = try db.cached("SELECT \(Self.columns) FROM \(Self.joined) WHERE d.id = ?").bind([id])
        defer { q.reset() }
        return try q.step() ? Self.delivery(q) : nil
    }

    /// What ``requeue(_:now:)`` did.
    package enum Requeued: Sendable, Equatable {
        case notFound
        /// Being sent right now: left alone.
        case inFlight
        /// Queued again: the delivery as it now stands.
        case queued(WebhookDelivery)
    }

    /// Queues a delivery again by hand, whatever its status, with a fresh retry window: due at
    /// `now` when its subscriber's queue has no head, else behind that head (and before newer
    /// ones). A delivery being sent right now is left alone.
    package func requeue(_ id: Int64, now: Int64) throws -> Requeued {
        guard let found = try delivery(id) else { return .notFound }
        try lockQueue(endpoint: found.endpoint, appUserID: found.appUserID)
        guard let d = try delivery(id) else { return .notFound }  // as it stands now that the queue is ours
        if d.status == .pending, d.claimed, let due = d.dueAt, due > now { return .inFlight }
        try db.cached(
            """
            UPDATE webhook_deliveries SET status = 'pending', claimed_by = NULL, finished_at = NULL, attempts = 0,
                first_attempt_at = NULL,
                due_at = CASE WHEN status = 'pending' AND due_at IS NOT NULL THEN CAST(?2 AS BIGINT)
                    WHEN EXISTS (SELECT 1 FROM webhook_deliveries e WHERE e.endpoint = webhook_deliveries.endpoint
                        AND e.app_user_id = webhook_deliveries.app_user_id AND e.status = 'pending' AND e.due_at IS NOT NULL)
                    THEN NULL ELSE CAST(?2 AS BIGINT) END
            WHERE id = ?1
            """
        ).bind([id, now]).run()
        return try delivery(id).map { .queued($0) } ?? .notFound
    }

    /// Queues to `endpoint` again the messages created at or after `since` that `accepts` takes,
    /// oldest first, at most `limit` of them after the message row `after`: the last row queued
    /// (continue from it), nil when none was left.
    package func replay(
        to endpoint: String, since: Int64, after: Int64 = 0, limit: Int, now: Int64,
        accepts: (_ type: String, _ bundleID: String?) -> Bool
    ) throws -> (queued: Int, last: Int64?) {
        let q = try db.cached(
            """
            SELECT \(order), id, app_user_id, type, bundle_id FROM webhook_messages
            WHERE created_at >= ? AND \(order) > ? ORDER BY \(order) LIMIT ?
            """
        ).bind([since, after, Int64(limit)])
        var rows: [(Int64, String, String, String, String?)] = []
        while try q.step() { rows.append((q.int(0), q.text(1)!, q.text(2)!, q.text(3)!, q.text(4))) }
        var queued = 0
        for (_, id, user, type, bundle) in rows where accepts(type, bundle) {
            try queue(id, endpoint: endpoint, appUserID: user, now: now)
            queued += 1
        }
        return (queued, rows.last?.0)
    }

    /// Per endpoint: how many deliveries are pending and when the oldest of them was created.
    package func backlog() throws -> [String: (pending: Int, oldestCreatedAt: Int64)] {
        let q = try db.cached(
            "SELECT endpoint, count(*), min(created_at) FROM webhook_deliveries WHERE status = 'pending' GROUP BY endpoint")
        var result: [String: (Int, Int64)] = [:]
        while try q.step() { result[q.text(0)!] = (Int(q.int(1)), q.int(2)) }
        return result
    }

    /// Deletes deliveries that ended before `before`, then messages created before it that no
    /// delivery refers to any more: how many deliveries went. Pending ones are never deleted.
    @discardableResult
    package func prune(before: Int64, limit: Int = 1_000) throws -> Int {
        try db.cached(
            """
            DELETE FROM webhook_deliveries WHERE id IN (
                SELECT id FROM webhook_deliveries WHERE status != 'pending' AND finished_at < ? LIMIT ?)
            """
        ).bind([before, Int64(limit)]).run()
        let deleted = db.changes
        try db.cached(
            """
            DELETE FROM webhook_messages WHERE id IN (
                SELECT m.id FROM webhook_messages m WHERE m.created_at < ?
                AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.message_id = m.id) LIMIT ?)
            """
        ).bind([before, Int64(limit)]).run()
        return deleted
    }

    /// What keeps two claims apart (``Database/skippingLockedRows(of:)``).
    private var skipLocked: String { db.skippingLockedRows(of: "d") }

    /// The order messages were stored in: SQLite's rowid, PostgreSQL's `seq` (Migrations/postgresql/0010).
    private var order: String { db.insertionOrder(column: "seq") }

    static let joined = "webhook_deliveries d JOIN webhook_messages m ON m.id = d.message_id"
    static let columns = """
        d.id, d.message_id, d.endpoint, d.app_user_id, d.status, d.due_at, d.claimed_by IS NOT NULL, d.attempts,
        d.first_attempt_at, d.last_status, d.last_error, d.last_attempt_at, d.created_at, d.finished_at, m.type, m.version
        """

    static func delivery(_ s: Statement) -> WebhookDelivery {
        WebhookDelivery(
            id: s.int(0), messageID: s.text(1)!, endpoint: s.text(2)!, appUserID: s.text(3)!,
            status: WebhookDelivery.Status(rawValue: s.text(4)!) ?? .pending, dueAt: s.optionalInt(5), claimed: s.int(6) == 1,
            attempts: Int(s.int(7)), firstAttemptAt: s.optionalInt(8), lastStatus: s.optionalInt(9).map(Int.init),
            lastError: s.text(10), lastAttemptAt: s.optionalInt(11), createdAt: s.int(12), finishedAt: s.optionalInt(13),
            type: s.text(14)!, version: s.int(15))
    }
}

/// One lifecycle event as pushed to webhook endpoints.
package struct WebhookMessage: Sendable, Equatable {
    /// The payload's `id`: consumers deduplicate on it.
    package var id: String
    package var appUserID: String
    /// The subscriber document's version after the change.
    package var version: Int64
    /// The event's type (`renewal`, `expiration`, …).
    package var type: String
    /// The app of the event's purchase, when known.
    package var bundleID: String?
    /// The payload, exactly as sent.
    package var body: String
    package var createdAt: Int64

    package init(
        id: String, appUserID: String, version: Int64, type: String, bundleID: String?, body: String, createdAt: Int64
    ) {
        self.id = id
        self.appUserID = appUserID
        self.version = version
        self.type = type
        self.bundleID = bundleID
        self.body = body
        self.createdAt = createdAt
    }
}

/// A delivery claimed for one attempt.
package struct WebhookClaim: Sendable, Equatable {
    package var deliveryID: Int64
    package var messageID: String
    package var endpoint: String
    package var appUserID: String
    /// This attempt's number, from 1.
    package var attempt: Int
    /// When the first attempt of this retry window was made (this one's time for the first).
    package var firstAttemptAt: Int64
    package var body: String

    package init(
        deliveryID: Int64, messageID: String, endpoint: String, appUserID: String, attempt: Int, firstAttemptAt: Int64,
        body: String
    ) {
        self.deliveryID = deliveryID
        self.messageID = messageID
        self.endpoint = endpoint
        self.appUserID = appUserID
        self.attempt = attempt
        self.firstAttemptAt = firstAttemptAt
        self.body = body
    }
}

/// What came of one attempt, and what happens next.
package struct WebhookAttemptOutcome: Sendable, Equatable {
    package enum Next: Sendable, Equatable {
        case delivered
        /// Try again at this time.
        case retry(at: Int64)
        /// Given up on: kept as a dead letter.
        case failed
    }

    package var next: Next
    /// The receiver's HTTP status; nil when it did not answer.
    package var httpStatus: Int?
    /// Why there was no answer (a timeout, a refused connection), or a short note on the answer.
    package var error: String?

    package init(next: Next, httpStatus: Int?, error: String?) {
        self.next = next
        self.httpStatus = httpStatus
        self.error = error
    }
}

/// One delivery as listed for operators.
package struct WebhookDelivery: Sendable, Equatable {
    package enum Status: String, Sendable, CaseIterable {
        case pending, delivered, failed
    }

    package var id: Int64
    package var messageID: String
    package var endpoint: String
    package var appUserID: String
    package var status: Status
    /// When it is next tried (while claimed: when the claim runs out); nil while it waits behind
    /// an earlier delivery of the same subscriber, or once ended.
    package var dueAt: Int64?
    /// Whether a process holds a claim on it.
    package var claimed: Bool
    package var attempts: Int
    package var firstAttemptAt: Int64?
    package var lastStatus: Int?
    package var lastError: String?
    package var lastAttemptAt: Int64?
    package var createdAt: Int64
    package var finishedAt: Int64?
    /// The message's event type and subscriber version.
    package var type: String
    package var version: Int64
}
