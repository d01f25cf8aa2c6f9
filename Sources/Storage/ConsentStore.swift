package import DatabaseEngine

/// Customers who withdrew their consent to share consumption data with Apple (Apple's
/// `RESCIND_CONSENT`), by `appTransactionId` (Migrations/0030_consumption_consent.sql).
package struct ConsentStore {
    private let db: Database

    package init(_ database: Database) { db = database }

    /// Records that the Apple Account `appTransactionID` withdrew its consent at `at`; the first
    /// record stays (a notification delivered again changes nothing). Whether this one was new.
    @discardableResult
    package func rescind(appTransactionID: String, bundleID: String, environment: String, at: Int64, notificationID: Int64)
        throws -> Bool
    {
        try db.cached(
            """
            INSERT INTO consumption_consent_rescinded (app_transaction_id, bundle_id, environment, rescinded_at, notification_id)
            VALUES (?, ?, ?, ?, ?) ON CONFLICT (app_transaction_id) DO NOTHING
            """
        ).bind([appTransactionID, bundleID, environment, at, notificationID]).run()
        return db.changes > 0
    }

    /// When the customer behind the transaction `transactionID` withdrew their consent, nil when
    /// they have not (or nobody is known). The customer is the transaction's own
    /// `appTransactionId`, or else any of its holder's AppTransactions.
    package func rescinded(forTransaction transactionID: String) throws -> Int64? {
        try db.cached(
            """
            SELECT min(c.rescinded_at) FROM consumption_consent_rescinded c
            WHERE c.app_transaction_id IN (
                SELECT t.app_transaction_id FROM transactions t WHERE t.transaction_id = ?1 AND t.app_transaction_id IS NOT NULL
                UNION ALL
                SELECT a.app_transaction_id FROM transactions t
                JOIN ownership o ON o.original_transaction_id = t.original_transaction_id
                JOIN app_transactions a ON a.app_user_id = o.app_user_id
                WHERE t.transaction_id = ?1)
            """
        ).bind([transactionID]).firstInt()
    }

    /// Who the Apple Account `appTransactionID` is here: an app user with its AppTransaction, or
    /// the holder of a purchase it made; nil when nobody is known.
    package func person(of appTransactionID: String) throws -> String? {
        let q = try db.cached(
            """
            SELECT app_user_id FROM app_transactions WHERE app_transaction_id = ?1
            UNION ALL
            SELECT o.app_user_id FROM transactions t JOIN ownership o ON o.original_transaction_id = t.original_transaction_id
            WHERE t.app_transaction_id = ?1
            LIMIT 1
            """
        ).bind([appTransactionID])
        return try q.step() ? q.text(0) : nil
    }
}
