package import DatabaseEngine

/// Calls receiptd owes the App Store Server API (Migrations/0032_app_store_calls.sql): queued in
/// the transaction of the save that makes them due, made once by a worker under a lease.
package struct AppStoreCallStore {
    /// Which call.
    package enum Kind: String, Sendable, CaseIterable {
        /// Finish Transaction: the subject is the transaction id.
        case finishTransaction = "finish_transaction"
        /// Set App Account Token: the subject is the original transaction id, the argument the token.
        case setAppAccountToken = "set_app_account_token"
    }

    /// One call to make: which, about what, where, and how many times it failed already.
    package struct Call: Sendable, Equatable {
        package var kind: Kind
        package var subject: String
        package var argument: String?
        package var bundleID: String
        /// `production` or `sandbox`.
        package var environment: String
        package var attempts: Int
    }

    /// The queue's depth, for metrics.
    package struct Backlog: Sendable, Equatable {
        package var pending: Int
        package var oldestQueuedAt: Int64?
        package var retrying: Int
    }

    private let db: Database

    package init(_ database: Database) { db = database }

    /// Queues a call, due at once. A call of the same kind about the same subject queued before
    /// stays as it is (made, refused or waiting), unless its argument differs: then it is due
    /// again with the new one (a purchase that changed hands is told its new holder). Whether
    /// anything is now due that was not.
    @discardableResult
    package func enqueue(
        _ kind: Kind, subject: String, argument: String? = nil, bundleID: String, environment: String, now: Int64
    )
        throws -> Bool
    {
        try db.cached(
            """
            INSERT INTO app_store_calls (kind, subject, argument, bundle_id, environment, queued_at, due_at)
            VALUES (?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (kind, subject) DO UPDATE SET argument = excluded.argument, bundle_id = excluded.bundle_id,
                environment = excluded.environment, queued_at = excluded.queued_at, due_at = excluded.due_at, attempts = 0,
                last_error = NULL, finished_at = NULL, outcome = NULL
            WHERE app_store_calls.argument IS DISTINCT FROM excluded.argument
            """
        ).bind([kind.rawValue, subject, argument, bundleID, environment, now, now]).run()
        return db.changes > 0
    }

    /// Claims up to `limit` calls due at `now` until `now + leaseMs`: none another worker holds,
    /// the longest due first. A claim left by a process that died runs out.
    package func claim(now: Int64, leaseMs: Int64, limit: Int) throws -> [Call] {
        let q = try db.cached(
            """
            SELECT kind, subject, argument, bundle_id, environment, attempts FROM app_store_calls
            WHERE due_at <= ? AND (lease_until IS NULL OR lease_until <= ?) ORDER BY due_at LIMIT ?
            """
        ).bind([now, now, Int64(limit)])
        var found: [Call] = []
        while try q.step() {
            guard let kind = Kind(rawValue: q.text(0)!) else { continue }
            found.append(
                Call(
                    kind: kind, subject: q.text(1)!, argument: q.text(2), bundleID: q.text(3)!, environment: q.text(4)!,
                    attempts: Int(q.int(5))))
        }
        let take = try db.cached(
            """
            UPDATE app_store_calls SET lease_until = ?
            WHERE kind = ? AND subject = ? AND due_at IS NOT NULL AND (lease_until IS NULL OR lease_until <= ?)
            """)
        var claimed: [Call] = []
        for call in found {
            try take.bind([now + leaseMs, call.kind.rawValue, call.subject, now]).run()
            if db.changes == 1 { claimed.append(call) }
        }
        return claimed
    }

    /// Apple took it (`done`), or never will (`refused`, with why): nothing more is due, unless the
    /// call was queued again meanwhile with another argument (then that one stays due).
    package func settle(_ call: Call, outcome: String, error: String? = nil, at now: Int64) throws {
        try db.cached(
            """
            UPDATE app_store_calls SET due_at = NULL, lease_until = NULL, finished_at = ?, outcome = ?, last_error = ?,
                attempts = attempts + ?
            WHERE kind = ? AND subject = ? AND argument IS NOT DISTINCT FROM ?
            """
        ).bind([
            now, outcome, error.map { String($0.prefix(200)) }, outcome == "done" ? 0 : 1, call.kind.rawValue, call.subject,
            call.argument,
        ]).run()
    }

    /// The call failed for now: tried again at `retryAt`.
    package func failed(_ call: Call, error: String, retryAt: Int64) throws {
        try db.cached(
            """
            UPDATE app_store_calls SET due_at = ?, attempts = attempts + 1, last_error = ?, lease_until = NULL
            WHERE kind = ? AND subject = ? AND argument IS NOT DISTINCT FROM ?
            """
        ).bind([retryAt, String(error.prefix(200)), call.kind.rawValue, call.subject, call.argument]).run()
    }

    /// Where a call stands: its outcome (nil while due) and attempts; nil when never queued.
    package func state(_ kind: Kind, subject: String) throws -> (outcome: String?, argument: String?, attempts: Int)? {
        let q = try db.cached("SELECT outcome, argument, attempts FROM app_store_calls WHERE kind = ? AND subject = ?")
            .bind([kind.rawValue, subject])
        return try q.step() ? (q.text(0), q.text(1), Int(q.int(2))) : nil
    }

    package func backlog() throws -> Backlog {
        let q = try db.cached(
            """
            SELECT count(due_at), min(CASE WHEN due_at IS NOT NULL THEN queued_at END),
                   count(CASE WHEN due_at IS NOT NULL AND attempts > 0 THEN 1 END)
            FROM app_store_calls
            """
        ).bind([])
        _ = try q.step()
        return Backlog(pending: Int(q.int(0)), oldestQueuedAt: q.optionalInt(1), retrying: Int(q.int(2)))
    }

    // MARK: Each person's appAccountToken

    /// `appUserID`'s (a canonical id) appAccountToken, made with `make` and kept the first time it
    /// is asked for; nil when they are no subscriber.
    package func accountToken(of appUserID: String, make: () -> String) throws -> String? {
        let q = try db.cached("SELECT app_account_token FROM subscribers WHERE app_user_id = ?").bind([appUserID])
        guard try q.step() else { return nil }
        if let token = q.text(0) { return token }
        let token = make()
        try db.cached("UPDATE subscribers SET app_account_token = ? WHERE app_user_id = ? AND app_account_token IS NULL")
            .bind([token, appUserID]).run()
        return try db.cached("SELECT app_account_token FROM subscribers WHERE app_user_id = ?").bind([appUserID]).firstText()
    }

    /// The token the newest stored transaction of the purchase `original` carries, if any.
    package func purchaseToken(_ original: String) throws -> String? {
        try db.cached(
            """
            SELECT app_account_token FROM transactions WHERE original_transaction_id = ? AND app_account_token IS NOT NULL
            ORDER BY purchase_date DESC, transaction_id DESC LIMIT 1
            """
        ).bind([original]).firstText()
    }
}
