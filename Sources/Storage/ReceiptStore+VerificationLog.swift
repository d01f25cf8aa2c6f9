import DatabaseEngine
import Entitlements
import Identifiers

// The verification log: each verification's outcome, for the overview and the audit.
extension ReceiptStore {
    /// When Apple last vouched for `appUserID`'s facts: their newest valid verification (a
    /// receipt, a StoreKit 2 transaction, an App Store Server API answer) or notification applied to them; nil when never.
    package func lastVerifiedAt(_ appUserID: String) throws -> Int64? {
        try db.cached(
            """
            SELECT max(at) FROM (
                SELECT max(at) AS at FROM verifications
                WHERE app_user_id = ?1 AND outcome IN ('valid', 'signed_transaction', 'server_api')
                UNION ALL
                SELECT max(received_at) FROM notifications
                WHERE app_user_id = ?1 AND outcome IN ('applied', 'unchanged', 'attached')) AS latest
            """
        ).bind([appUserID]).firstInt()
    }

    /// Appends one row to the verification log.
    /// Exchanges with Apple logged in [from, to), per outcome.
    package func verificationCounts(from: Int64, to: Int64) throws -> [(outcome: String, count: Int)] {
        let q = try db.cached(
            "SELECT outcome, count(*) FROM verifications WHERE at >= ? AND at < ? GROUP BY outcome ORDER BY outcome"
        ).bind([from, to])
        var rows: [(String, Int)] = []
        while try q.step() { rows.append((q.text(0)!, Int(q.int(1)))) }
        return rows
    }

    /// ``log(_:at:)`` for work that began at `begun` (before a store was asked): nothing when the
    /// person was erased since (``ErasedIDs``).
    package func log(_ entry: VerificationLogEntry, at now: Int64, unlessErasedSince begun: Int64) throws {
        if let user = entry.appUserID, try ErasedIDs(db).anyErased([user], since: begun) { return }
        try log(entry, at: now)
    }

    package func log(_ entry: VerificationLogEntry, at now: Int64) throws {
        try db.cached(
            "INSERT INTO verifications (app_user_id, environment, apple_status, outcome, attempts, latency_ms, at) VALUES (?, ?, ?, ?, ?, ?, ?)"
        ).bind([
            entry.appUserID, entry.environment?.rawValue, entry.appleStatus, entry.outcome, entry.attempts, entry.latencyMs, now,
        ])
        .runLater()
    }
}
