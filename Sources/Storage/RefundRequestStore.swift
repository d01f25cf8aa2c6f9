import Analytics
package import DatabaseEngine

/// The App Store's refund requests as Apple told them (Migrations/0039_refund_requests.sql): a
/// request (`CONSUMPTION_REQUEST`), what receiptd answered, and Apple's decision (`REFUND`,
/// `REFUND_DECLINED`, `REFUND_REVERSED`). Synchronous: use it inside `DatabaseQueue.write` or `read`.
package struct RefundRequestStore {
    private let db: Database

    package init(_ database: Database) { db = database }

    /// Records what the stored V2 notification `notificationID` of `type` says of the purchase
    /// `originalTransactionID` (its transaction `transactionID`), signed `at`; once (a delivery
    /// again changes nothing), a request with the customer's `reason`. Whether it was a type this
    /// table keeps, and new.
    @discardableResult
    package func record(
        notificationID: Int64, type: String, originalTransactionID: String, transactionID: String, at: Int64,
        reason: String? = nil
    ) throws -> Bool {
        guard let kind = RefundRequestEvent.Kind(notificationType: type) else { return false }
        try db.cached(
            """
            INSERT INTO refund_requests (notification_id, original_transaction_id, transaction_id, kind, at, reason)
            VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (notification_id) DO NOTHING
            """
        ).bind([notificationID, originalTransactionID, transactionID, kind.rawValue, at, kind == .requested ? reason : nil])
            .run()
        return db.changes > 0
    }

    /// Records receiptd's answer to the request of notification `notificationID`: `answer` (`sent`,
    /// `consent_rescinded` or the failure's name), sent `answeredAt` (nil: nothing was sent). A
    /// later answer replaces an earlier failed one, never one sent. The holder of its purchase
    /// (whose charts it changes), or nil when nobody holds it or the request is gone (erased).
    package func answered(notificationID: Int64, answer: String, at answeredAt: Int64?) throws -> String? {
        try db.cached(
            """
            UPDATE refund_requests SET answer = ?, answered_at = ?
            WHERE notification_id = ? AND kind = 'requested' AND answered_at IS NULL
            """
        ).bind([answer, answeredAt, notificationID]).run()
        guard db.changes > 0 else { return nil }
        let q = try db.cached(
            """
            SELECT o.app_user_id FROM refund_requests r JOIN ownership o ON o.original_transaction_id = r.original_transaction_id
            WHERE r.notification_id = ?
            """
        ).bind([notificationID])
        defer { q.reset() }
        return try q.step() ? q.text(0) : nil
    }
}

extension RefundRequestEvent.Kind {
    /// The kind a V2 notification of `type` records; nil for every other type.
    init?(notificationType type: String) {
        switch type {
        case "CONSUMPTION_REQUEST": self = .requested
        case "REFUND": self = .granted
        case "REFUND_DECLINED": self = .declined
        case "REFUND_REVERSED": self = .reversed
        default: return nil
        }
    }
}
