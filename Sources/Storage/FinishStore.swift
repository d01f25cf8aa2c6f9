/// The queue of App Store Finish Transaction calls (Migrations/0032_transaction_finishes.sql):
/// consumables stored for an app user, to be finished at Apple once, under a lease.
public struct FinishStore {
    /// One call to make: its transaction, where, and how many times it failed already.
    public struct Chore: Sendable, Equatable {
        public var transactionID: String
        public var bundleID: String
        /// `production` or `sandbox`.
        public var environment: String
        public var attempts: Int
    }

    /// The queue's depth, for metrics.
    public struct Backlog: Sendable, Equatable {
        public var pending: Int
        public var oldestQueuedAt: Int64?
        public var retrying: Int
    }

    private let db: Database

    public init(_ database: Database) { db = database }

    /// Queues `transactionID` to be finished, due at once; a transaction queued before stays as it is
    /// (finished, refused or waiting). Whether it was new.
    @discardableResult
    public func enqueue(transactionID: String, bundleID: String, environment: String, now: Int64) throws -> Bool {
        try db.cached(
            """
            INSERT INTO transaction_finishes (transaction_id, bundle_id, environment, queued_at, due_at)
            VALUES (?, ?, ?, ?, ?) ON CONFLICT (transaction_id) DO NOTHING
            """
        ).bind([transactionID, bundleID, environment, now, now]).run()
        return db.changes > 0
    }

    /// Claims up to `limit` calls due at `now` until `now + leaseMs`: none another worker holds,
    /// the longest due first. A claim left by a process that died runs out.
    public func claim(now: Int64, leaseMs: Int64, limit: Int) throws -> [Chore] {
        let q = try db.cached(
            """
            SELECT transaction_id, bundle_id, environment, attempts FROM transaction_finishes
            WHERE due_at <= ? AND (lease_until IS NULL OR lease_until <= ?) ORDER BY due_at LIMIT ?
            """
        ).bind([now, now, Int64(limit)])
        var found: [Chore] = []
        while try q.step() {
            found.append(Chore(transactionID: q.text(0)!, bundleID: q.text(1)!, environment: q.text(2)!, attempts: Int(q.int(3))))
        }
        let take = try db.cached(
            "UPDATE transaction_finishes SET lease_until = ? WHERE transaction_id = ? AND (lease_until IS NULL OR lease_until <= ?)"
        )
        var claimed: [Chore] = []
        for chore in found {
            try take.bind([now + leaseMs, chore.transactionID, now]).run()
            if db.changes == 1 { claimed.append(chore) }
        }
        return claimed
    }

    /// Apple took it (`finished`), or never will (`refused`, with why): nothing more is due.
    public func settle(_ transactionID: String, outcome: String, error: String? = nil, at now: Int64) throws {
        try db.cached(
            """
            UPDATE transaction_finishes SET due_at = NULL, lease_until = NULL, finished_at = ?, outcome = ?, last_error = ?,
                attempts = attempts + ?
            WHERE transaction_id = ?
            """
        ).bind([now, outcome, error.map { String($0.prefix(200)) }, outcome == "finished" ? 0 : 1, transactionID]).run()
    }

    /// The call failed for now: tried again at `retryAt`.
    public func failed(_ transactionID: String, error: String, retryAt: Int64) throws {
        try db.cached(
            """
            UPDATE transaction_finishes SET due_at = ?, attempts = attempts + 1, last_error = ?, lease_until = NULL
            WHERE transaction_id = ?
            """
        ).bind([retryAt, String(error.prefix(200)), transactionID]).run()
    }

    /// Where `transactionID` stands: its outcome (nil while waiting) and attempts; nil when never queued.
    public func state(of transactionID: String) throws -> (outcome: String?, attempts: Int)? {
        let q = try db.cached("SELECT outcome, attempts FROM transaction_finishes WHERE transaction_id = ?").bind([
            transactionID
        ])
        return try q.step() ? (q.text(0), Int(q.int(1))) : nil
    }

    public func backlog() throws -> Backlog {
        let q = try db.cached(
            """
            SELECT count(due_at), min(CASE WHEN due_at IS NOT NULL THEN queued_at END),
                   count(CASE WHEN due_at IS NOT NULL AND attempts > 0 THEN 1 END)
            FROM transaction_finishes
            """
        ).bind([])
        _ = try q.step()
        return Backlog(pending: Int(q.int(0)), oldestQueuedAt: q.optionalInt(1), retrying: Int(q.int(2)))
    }
}
