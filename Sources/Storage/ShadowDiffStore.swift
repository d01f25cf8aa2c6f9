package import DatabaseEngine

/// Shadow mode's findings (`shadow_diffs`, Migrations/0009_server_api.sql): one row per receipt
/// whose verifyReceipt and App Store Server API answers derived to different documents.
package struct ShadowDiffStore {
    private let db: Database

    package init(_ database: Database) { db = database }

    /// Records a comparison that found differences (`differences`: a JSON array); the new row's id.
    @discardableResult
    package func insert(_ diff: ShadowDiffRecord) throws -> Int64 {
        let inserted = try db.cached(
            "INSERT INTO shadow_diffs (app_user_id, transaction_id, environment, differences, at) VALUES (?, ?, ?, ?, ?) RETURNING id"
        ).bind([diff.appUserID, diff.transactionID, diff.environment, diff.differences, diff.at])
        defer { inserted.reset() }
        return try inserted.step() ? inserted.int(0) : 0
    }

    /// The newest first, `limit` at a time, before the row id `before`.
    package func latest(limit: Int, before: Int64? = nil) throws -> [ShadowDiffRecord] {
        let q = try db.cached(
            """
            SELECT id, app_user_id, transaction_id, environment, differences, at FROM shadow_diffs
            WHERE id < ? ORDER BY id DESC LIMIT ?
            """
        ).bind([before ?? Int64.max, Int64(limit)])
        var rows: [ShadowDiffRecord] = []
        while try q.step() {
            rows.append(
                ShadowDiffRecord(
                    id: q.int(0), appUserID: q.text(1)!, transactionID: q.text(2)!, environment: q.text(3),
                    differences: q.text(4)!, at: q.int(5)))
        }
        return rows
    }
}

/// One comparison that found differences.
package struct ShadowDiffRecord: Sendable, Equatable {
    /// Row id; 0 before it is stored.
    package var id: Int64
    package var appUserID: String
    /// The transaction id the Server API was asked about.
    package var transactionID: String
    /// `production` or `sandbox`, as verifyReceipt answered.
    package var environment: String?
    /// A JSON array of `{"path", "verify_receipt", "server_api"}`.
    package var differences: String
    package var at: Int64

    package init(
        id: Int64 = 0, appUserID: String, transactionID: String, environment: String?, differences: String, at: Int64
    ) {
        self.id = id
        self.appUserID = appUserID
        self.transactionID = transactionID
        self.environment = environment
        self.differences = differences
        self.at = at
    }
}
