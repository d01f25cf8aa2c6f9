package import DatabaseEngine

/// A subscription the refresher may re-validate: its stored facts and bookkeeping.
package struct RefreshCandidate: Sendable, Equatable {
    package var originalTransactionID: String
    package var holder: String
    /// The latest expiry of its transactions.
    package var expiresAt: Int64
    package var inBillingRetry: Bool
    /// When a grace period ends, or a paused Google Play subscription resumes: asked about again then.
    package var gracePeriodExpiresAt: Int64?
    /// The last time Apple answered about it: a refresh, or a valid verification of its holder's receipt.
    package var lastCheckedAt: Int64?
    package var failures: Int
    package var nextAttemptAt: Int64?

    package init(
        originalTransactionID: String, holder: String, expiresAt: Int64, inBillingRetry: Bool, gracePeriodExpiresAt: Int64?,
        lastCheckedAt: Int64?, failures: Int, nextAttemptAt: Int64?
    ) {
        self.originalTransactionID = originalTransactionID
        self.holder = holder
        self.expiresAt = expiresAt
        self.inBillingRetry = inBillingRetry
        self.gracePeriodExpiresAt = gracePeriodExpiresAt
        self.lastCheckedAt = lastCheckedAt
        self.failures = failures
        self.nextAttemptAt = nextAttemptAt
    }
}

/// The refresher's bookkeeping (`refresh_checks`): candidates, leases, outcomes.
package struct RefreshStore {
    let db: Database

    package init(_ db: Database) { self.db = db }

    /// The `count`th held purchase after `after` in id order: the upper bound of the next slice to
    /// scan; nil when fewer remain (the slice runs to the end).
    package func sliceEnd(after: String?, count: Int) throws -> String? {
        let q = try db.cached(
            """
            SELECT original_transaction_id FROM ownership WHERE CAST(?1 AS TEXT) IS NULL OR original_transaction_id > ?1
            ORDER BY original_transaction_id LIMIT 1 OFFSET ?2
            """
        ).bind([after, Int64(count - 1)])
        return try q.step() ? q.text(0) : nil
    }

    /// Held subscriptions that expired between `since` and `now` and were not checked since (or
    /// are in billing retry or grace), not leased at `now`: those with a stored latest receipt,
    /// and with `withoutReceipt` (the App Store Server API is configured) StoreKit 2 ones with none.
    /// Only those with ids in (`after`, `through`] (nil: unbounded), so a large table is scanned a
    /// slice per database hop. At most `limit`, the longest expired first.
    package func candidates(
        now: Int64, since: Int64, after: String? = nil, through: String? = nil, limit: Int, withoutReceipt: Bool = false
    ) throws -> [RefreshCandidate] {
        let q = try db.cached(
            """
            SELECT original_transaction_id, app_user_id, expires, retry, grace, checked, failures, next_attempt_at, lease_until
            FROM (
                SELECT candidate.*,
                       nullif(CASE WHEN checked_here >= verified THEN checked_here ELSE verified END, 0) AS checked
                FROM (
                    SELECT o.original_transaction_id, o.app_user_id,
                           (SELECT max(t.expires_date) FROM transactions t
                            WHERE t.original_transaction_id = o.original_transaction_id) AS expires,
                           coalesce(r.is_in_billing_retry_period, 0) AS retry,
                           -- When to look again: a grace period's end, or a paused Play subscription's resumption.
                           CASE WHEN r.store_state = 'SUBSCRIPTION_STATE_PAUSED' THEN r.auto_resume_date
                                ELSE r.grace_period_expires_date END AS grace,
                           coalesce(c.checked_at, 0) AS checked_here,
                           coalesce((SELECT max(v.at) FROM verifications v
                                     WHERE v.app_user_id = o.app_user_id
                                       AND v.outcome IN ('valid', 'server_api', 'google_play')), 0) AS verified,
                           coalesce(c.failures, 0) AS failures, c.next_attempt_at, c.lease_until
                    FROM ownership o
                    LEFT JOIN latest_receipts l ON l.original_transaction_id = o.original_transaction_id
                    LEFT JOIN pending_renewal_info r ON r.original_transaction_id = o.original_transaction_id
                    LEFT JOIN refresh_checks c ON c.original_transaction_id = o.original_transaction_id
                    WHERE (CAST(?4 AS TEXT) IS NULL OR o.original_transaction_id > ?4)
                      AND (CAST(?5 AS TEXT) IS NULL OR o.original_transaction_id <= ?5)
                      AND (l.original_transaction_id IS NOT NULL OR ?6 = 1
                           OR EXISTS (SELECT 1 FROM play_tokens p WHERE p.chain = o.original_transaction_id))
                ) AS candidate
            ) AS judged
            WHERE expires IS NOT NULL AND expires <= ?1 AND expires >= ?2
              AND (checked IS NULL OR checked < expires OR retry = 1 OR grace IS NOT NULL)
              AND (lease_until IS NULL OR lease_until <= ?1)
            ORDER BY expires LIMIT ?3
            """
        ).bind([now, since, Int64(limit), after, through, withoutReceipt ? 1 : 0])
        var found: [RefreshCandidate] = []
        while try q.step() {
            found.append(
                RefreshCandidate(
                    originalTransactionID: q.text(0)!, holder: q.text(1)!, expiresAt: q.int(2), inBillingRetry: q.int(3) == 1,
                    gracePeriodExpiresAt: q.optionalInt(4), lastCheckedAt: q.optionalInt(5), failures: Int(q.int(6)),
                    nextAttemptAt: q.optionalInt(7)))
        }
        return found
    }

    /// Claims a subscription until `until` unless another claim is still running at `now`; whether
    /// this caller got it. Call inside a write transaction.
    package func claim(_ original: String, now: Int64, until: Int64) throws -> Bool {
        try db.cached(
            """
            INSERT INTO refresh_checks (original_transaction_id, lease_until) VALUES (?1, ?3)
            ON CONFLICT (original_transaction_id) DO UPDATE SET lease_until = ?3
            WHERE refresh_checks.lease_until IS NULL OR refresh_checks.lease_until <= ?2
            """
        ).bind([original, now, until]).run()
        return db.changes > 0
    }

    /// The stored latest receipt of a subscription and its environment.
    package func latestReceipt(_ original: String) throws -> (receiptData: String, environment: String)? {
        let q = try db.cached("SELECT receipt_data, environment FROM latest_receipts WHERE original_transaction_id = ?")
            .bind([original])
        return try q.step() ? (q.text(0)!, q.text(1)!) : nil
    }

    /// The app and environment of a subscription's newest transaction (what the App Store Server
    /// API is asked in, for a subscription without a receipt).
    package func app(of original: String) throws -> (bundleID: String, environment: String)? {
        let q = try db.cached(
            """
            SELECT bundle_id, environment FROM transactions WHERE original_transaction_id = ?
            ORDER BY coalesce(expires_date, purchase_date, 0) DESC LIMIT 1
            """
        ).bind([original])
        return try q.step() ? (q.text(0)!, q.text(1)!) : nil
    }

    /// Apple answered (`outcome`): checked now, failures reset, the claim released.
    package func answered(_ original: String, outcome: String, now: Int64) throws {
        try db.cached(
            """
            UPDATE refresh_checks SET checked_at = ?2, outcome = ?3, failures = 0, next_attempt_at = NULL, lease_until = NULL
            WHERE original_transaction_id = ?1
            """
        ).bind([original, now, outcome]).run()
    }

    /// Apple did not answer: one more failure, no attempt before `retryAt`, the claim released.
    package func failed(_ original: String, outcome: String, retryAt: Int64) throws {
        try db.cached(
            """
            UPDATE refresh_checks SET outcome = ?2, failures = failures + 1, next_attempt_at = ?3, lease_until = NULL
            WHERE original_transaction_id = ?1
            """
        ).bind([original, outcome, retryAt]).run()
    }

    /// Gives a claim back untouched (the refresher stopped before trying it).
    package func release(_ original: String) throws {
        try db.cached("UPDATE refresh_checks SET lease_until = NULL WHERE original_transaction_id = ?").bind([original]).run()
    }
}
