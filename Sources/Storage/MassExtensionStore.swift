package import DatabaseEngine

/// One request to extend every active subscription to a product (`mass_extensions`,
/// Migrations/0033_mass_extensions.sql): what was asked, by whom, and how far it has come.
package struct MassExtensionRecord: Sendable, Equatable {
    package enum Status: String, Sendable, CaseIterable {
        /// Stored; Apple has not accepted it yet (the first call failed for now, or is being made).
        case submitting
        /// Apple accepted it and works through the subscriptions (hours, or days).
        case inProgress = "in_progress"
        /// Apple finished; the new expiries of the stored subscriptions it reached are being fetched.
        case refreshing
        case complete
        /// Apple will never take it (an unknown product, a request it does not allow).
        case refused
    }

    package var requestID: String
    package var bundleID: String
    /// `production` or `sandbox`.
    package var environment: String
    package var productID: String
    /// ISO 3166-1 alpha-3 codes, sorted; empty: every storefront.
    package var storefronts: [String]
    package var days: Int
    /// The reason's name (`service_issue`, …).
    package var reason: String
    package var requestedBy: String
    package var requestedAt: Int64
    package var status: Status
    package var submittedAt: Int64?
    /// When Apple says it finished (`completeDate`, or the SUMMARY notification's signing).
    package var appleCompletedAt: Int64?
    package var succeededCount: Int64?
    package var failedCount: Int64?
    /// Stored subscriptions whose new expiry was fetched so far.
    package var refreshed: Int
    /// The last original transaction id the refresh looked at (held subscriptions, in id order).
    package var refreshAfter: String?
    package var finishedAt: Int64?
    /// When the next step is due; nil once complete or refused.
    package var dueAt: Int64?
    package var attempts: Int
    package var lastError: String?

    package init(
        requestID: String, bundleID: String, environment: String, productID: String, storefronts: [String], days: Int,
        reason: String, requestedBy: String, requestedAt: Int64, status: Status = .submitting, submittedAt: Int64? = nil,
        appleCompletedAt: Int64? = nil, succeededCount: Int64? = nil, failedCount: Int64? = nil, refreshed: Int = 0,
        refreshAfter: String? = nil, finishedAt: Int64? = nil, dueAt: Int64? = nil, attempts: Int = 0, lastError: String? = nil
    ) {
        self.requestID = requestID
        self.bundleID = bundleID
        self.environment = environment
        self.productID = productID
        self.storefronts = storefronts
        self.days = days
        self.reason = reason
        self.requestedBy = requestedBy
        self.requestedAt = requestedAt
        self.status = status
        self.submittedAt = submittedAt
        self.appleCompletedAt = appleCompletedAt
        self.succeededCount = succeededCount
        self.failedCount = failedCount
        self.refreshed = refreshed
        self.refreshAfter = refreshAfter
        self.finishedAt = finishedAt
        self.dueAt = dueAt
        self.attempts = attempts
        self.lastError = lastError
    }

    /// Whether `other` asks for the same extension (who asked and when aside): a retry.
    package func asksTheSame(as other: MassExtensionRecord) -> Bool {
        (bundleID, environment, productID, storefronts, days, reason)
            == (other.bundleID, other.environment, other.productID, other.storefronts, other.days, other.reason)
    }
}

/// The mass extensions (`mass_extensions`): stored once per request id, claimed under a lease by
/// whichever instance works them, listed newest first.
package struct MassExtensionStore {
    private let db: Database

    package init(_ database: Database) { db = database }

    private static let columns = """
        request_id, bundle_id, environment, product_id, storefronts, days, reason, requested_by, requested_at, status,
        submitted_at, apple_completed_at, succeeded_count, failed_count, refreshed, refresh_after, finished_at, due_at,
        attempts, last_error
        """

    /// Stores a new request, claimed until `leaseUntil` when given (its asker makes the first
    /// call); false (nothing written) when one with its id is stored already.
    package func insert(_ r: MassExtensionRecord, leaseUntil: Int64? = nil) throws -> Bool {
        try db.cached(
            """
            INSERT INTO mass_extensions (\(Self.columns), lease_until)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (request_id) DO NOTHING
            """
        ).bind([
            r.requestID, r.bundleID, r.environment, r.productID, r.storefronts.joined(separator: ","), Int64(r.days), r.reason,
            r.requestedBy, r.requestedAt, r.status.rawValue, r.submittedAt, r.appleCompletedAt, r.succeededCount, r.failedCount,
            Int64(r.refreshed), r.refreshAfter, r.finishedAt, r.dueAt, Int64(r.attempts), r.lastError, leaseUntil,
        ]).run()
        return db.changes > 0
    }

    package func find(_ requestID: String) throws -> MassExtensionRecord? {
        let q = try db.cached("SELECT \(Self.columns) FROM mass_extensions WHERE request_id = ?").bind([requestID])
        return try q.step() ? Self.record(q) : nil
    }

    /// Newest first; `before` (the last row's `requested_at` and id) pages on.
    package func list(limit: Int, before: (requestedAt: Int64, requestID: String)? = nil) throws -> [MassExtensionRecord] {
        let q = try db.cached(
            """
            SELECT \(Self.columns) FROM mass_extensions
            WHERE CAST(?1 AS BIGINT) IS NULL OR requested_at < ?1 OR (requested_at = ?1 AND request_id < ?2)
            ORDER BY requested_at DESC, request_id DESC LIMIT ?3
            """
        ).bind([before?.requestedAt, before?.requestID, Int64(limit)])
        var found: [MassExtensionRecord] = []
        while try q.step() { found.append(Self.record(q)) }
        return found
    }

    /// Claims up to `limit` requests whose next step is due at `now`, until `now + leaseMs`: none
    /// another worker holds. A claim left by a process that died runs out.
    package func claim(now: Int64, leaseMs: Int64, limit: Int) throws -> [MassExtensionRecord] {
        let q = try db.cached(
            """
            SELECT \(Self.columns) FROM mass_extensions
            WHERE due_at <= ? AND (lease_until IS NULL OR lease_until <= ?) ORDER BY due_at LIMIT ?
            """
        ).bind([now, now, Int64(limit)])
        var due: [MassExtensionRecord] = []
        while try q.step() { due.append(Self.record(q)) }
        let take = try db.cached(
            """
            UPDATE mass_extensions SET lease_until = ?
            WHERE request_id = ? AND due_at IS NOT NULL AND (lease_until IS NULL OR lease_until <= ?)
            """)
        var claimed: [MassExtensionRecord] = []
        for r in due {
            try take.bind([now + leaseMs, r.requestID, now]).run()
            if db.changes == 1 { claimed.append(r) }
        }
        return claimed
    }

    /// Stores how far a claimed request came (its status, Apple's counts, the refresh's progress,
    /// the next step's time) and gives the claim back, or with `keepingLeaseUntil` holds it on (a
    /// refresh saving its progress slice by slice). Only from `claimedStatus`: a SUMMARY
    /// notification that moved it on meanwhile is kept, and the next pass takes it from there.
    /// Whether it was saved.
    @discardableResult
    package func save(_ r: MassExtensionRecord, claimedStatus: MassExtensionRecord.Status, keepingLeaseUntil: Int64? = nil)
        throws -> Bool
    {
        try db.cached(
            """
            UPDATE mass_extensions SET status = ?, submitted_at = ?, apple_completed_at = ?, succeeded_count = ?,
                failed_count = ?, refreshed = ?, refresh_after = ?, finished_at = ?, due_at = ?, attempts = ?,
                last_error = ?, lease_until = ?
            WHERE request_id = ? AND status = ?
            """
        ).bind([
            r.status.rawValue, r.submittedAt, r.appleCompletedAt, r.succeededCount, r.failedCount, Int64(r.refreshed),
            r.refreshAfter, r.finishedAt, r.dueAt, Int64(r.attempts), r.lastError.map { String($0.prefix(300)) },
            keepingLeaseUntil, r.requestID, claimedStatus.rawValue,
        ]).run()
        if db.changes > 0 { return true }
        try db.cached("UPDATE mass_extensions SET lease_until = NULL WHERE request_id = ?").bind([r.requestID]).run()
        return false
    }

    /// Apple's SUMMARY notification for `requestID` (of `productID`): finished with these counts.
    /// A request still submitting or in progress moves on to refreshing, due `now`. Whether it did.
    package func summarized(
        _ requestID: String, productID: String, succeeded: Int64?, failed: Int64?, at completedAt: Int64, now: Int64
    ) throws -> Bool {
        try db.cached(
            """
            UPDATE mass_extensions SET status = 'refreshing', apple_completed_at = ?, succeeded_count = ?,
                failed_count = ?, submitted_at = coalesce(submitted_at, ?), due_at = ?, attempts = 0, last_error = NULL
            WHERE request_id = ? AND product_id = ? AND status IN ('submitting', 'in_progress')
            """
        ).bind([completedAt, succeeded, failed, completedAt, now, requestID, productID]).run()
        return db.changes > 0
    }

    /// Requests not yet complete or refused.
    package func running() throws -> Int {
        let q = try db.cached("SELECT count(*) FROM mass_extensions WHERE due_at IS NOT NULL").bind([])
        _ = try q.step()
        return Int(q.int(0))
    }

    /// One slice of the stored subscriptions a finished request reached: held purchases with ids
    /// in (`after`, `through`] (nil: unbounded) whose newest transaction is of its product, app and
    /// environment, not upgraded away, and running at or after `requestedAt` (in one of its
    /// storefronts, when it names some). Each with its holder and its latest expiry; in id order.
    package func reached(by r: MassExtensionRecord, after: String?, through: String?) throws -> [(
        original: String, holder: String, expiresAt: Int64
    )] {
        let q = try db.cached(
            """
            SELECT o.original_transaction_id, o.app_user_id,
                   (SELECT max(t.expires_date) FROM transactions t WHERE t.original_transaction_id = o.original_transaction_id)
            FROM ownership o
            WHERE (CAST(?1 AS TEXT) IS NULL OR o.original_transaction_id > ?1)
              AND (CAST(?2 AS TEXT) IS NULL OR o.original_transaction_id <= ?2)
              AND EXISTS (
                  SELECT 1 FROM transactions t
                  WHERE t.original_transaction_id = o.original_transaction_id AND t.product_id = ?3 AND t.bundle_id = ?4
                    AND t.environment = ?5 AND t.expires_date >= ?6 AND t.is_upgraded = 0
                    AND (?7 = '' OR (',' || ?7 || ',') LIKE ('%,' || t.storefront || ',%'))
                    AND NOT EXISTS (
                        SELECT 1 FROM transactions n
                        WHERE n.original_transaction_id = t.original_transaction_id AND n.expires_date IS NOT NULL
                          AND n.purchase_date > t.purchase_date))
            ORDER BY o.original_transaction_id
            """
        ).bind([
            after, through, r.productID, r.bundleID, r.environment, r.requestedAt, r.storefronts.joined(separator: ","),
        ])
        var found: [(String, String, Int64)] = []
        while try q.step() { found.append((q.text(0)!, q.text(1)!, q.int(2))) }
        return found
    }

    private static func record(_ q: Statement) -> MassExtensionRecord {
        MassExtensionRecord(
            requestID: q.text(0)!, bundleID: q.text(1)!, environment: q.text(2)!, productID: q.text(3)!,
            storefronts: q.text(4)!.split(separator: ",").map(String.init), days: Int(q.int(5)), reason: q.text(6)!,
            requestedBy: q.text(7)!, requestedAt: q.int(8), status: MassExtensionRecord.Status(rawValue: q.text(9)!) ?? .refused,
            submittedAt: q.optionalInt(10), appleCompletedAt: q.optionalInt(11), succeededCount: q.optionalInt(12),
            failedCount: q.optionalInt(13), refreshed: Int(q.int(14)), refreshAfter: q.text(15), finishedAt: q.optionalInt(16),
            dueAt: q.optionalInt(17), attempts: Int(q.int(18)), lastError: q.text(19))
    }
}
