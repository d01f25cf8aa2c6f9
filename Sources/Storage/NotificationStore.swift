package import DatabaseEngine

/// Reads and writes App Store notifications as delivered (Migrations/0004_notifications.sql).
/// Synchronous: use it inside `DatabaseQueue.run`.
package struct NotificationStore {
    private let db: Database

    package init(_ database: Database) { db = database }

    /// Stores a delivery; nil when one with the same `dedupeKey` is already stored (then nothing is
    /// written). The new row's id otherwise.
    package func insert(_ n: NotificationRecord) throws -> Int64? {
        let inserted = try db.cached(
            """
            INSERT INTO notifications (dedupe_key, version, type, subtype, environment, bundle_id, original_transaction_id,
                transaction_id, apple_status, app_user_id, outcome, signed_at, received_at, body)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (dedupe_key) DO NOTHING RETURNING id
            """
        ).bind([
            n.dedupeKey, n.version, n.type, n.subtype, n.environment, n.bundleID, n.originalTransactionID, n.transactionID,
            n.appleStatus, n.appUserID, n.outcome, n.signedAt, n.receivedAt, n.body,
        ])
        defer { inserted.reset() }
        return try inserted.step() ? inserted.int(0) : nil
    }

    /// The stored delivery with this key.
    package func find(dedupeKey: String) throws -> NotificationRecord? {
        let q = try db.cached("SELECT \(Self.columns) FROM notifications WHERE dedupe_key = ?").bind([dedupeKey])
        return try q.step() ? Self.record(q) : nil
    }

    /// Records what processing a stored delivery did.
    package func finish(_ id: Int64, outcome: String, appUserID: String?) throws {
        try db.cached("UPDATE notifications SET outcome = ?, app_user_id = ? WHERE id = ?").bind([outcome, appUserID, id]).run()
    }

    /// Attaches to `appUserID` the deliveries that were waiting for a holder of `original`
    /// (outcome `pending_owner` → `attached`).
    package func attachPending(_ original: String, to appUserID: String) throws {
        try db.cached(
            """
            UPDATE notifications SET app_user_id = ?, outcome = 'attached'
            WHERE outcome = 'pending_owner' AND original_transaction_id = ?
            """
        ).bind([appUserID, original]).runLater()
    }

    /// Apple's `signedDate` of the newest V2 notification stored for an app in an environment
    /// (where Get Notification History picks up); nil when none is.
    package func newestSigned(bundleID: String, environment: String) throws -> Int64? {
        try db.cached(
            """
            SELECT max(signed_at) FROM notifications
            WHERE version = 2 AND bundle_id = ? AND environment = ? AND signed_at IS NOT NULL
            """
        ).bind([bundleID, environment]).firstInt()
    }

    /// The newest deliveries first, `limit` at a time, before the row id `before`.
    package func latest(limit: Int, before: Int64? = nil, filter: Filter = Filter()) throws -> [NotificationRecord] {
        var conditions = ["id < ?"]
        var values: [(any StatementValue)?] = [before ?? Int64.max]
        for (column, value) in [("type", filter.type), ("outcome", filter.outcome), ("app_user_id", filter.appUserID)] {
            guard let value else { continue }
            conditions.append("\(column) = ?")
            values.append(value)
        }
        values.append(Int64(limit))
        let q = try db.cached(
            "SELECT \(Self.columns) FROM notifications WHERE \(conditions.joined(separator: " AND ")) ORDER BY id DESC LIMIT ?"
        ).bind(values)
        var rows: [NotificationRecord] = []
        while try q.step() { rows.append(Self.record(q)) }
        return rows
    }

    /// Which notifications a listing shows: each set field must match exactly.
    package struct Filter: Sendable, Equatable {
        package var type: String?
        package var outcome: String?
        package var appUserID: String?
        package init(type: String? = nil, outcome: String? = nil, appUserID: String? = nil) {
            self.type = type
            self.outcome = outcome
            self.appUserID = appUserID
        }
    }

    /// Notifications received in [from, to) per (type, outcome).
    package func counts(from: Int64, to: Int64) throws -> [(type: String, outcome: String, count: Int)] {
        let q = try db.cached(
            """
            SELECT type, outcome, count(*) FROM notifications WHERE received_at >= ? AND received_at < ?
            GROUP BY type, outcome ORDER BY type, outcome
            """
        ).bind([from, to])
        var rows: [(String, String, Int)] = []
        while try q.step() { rows.append((q.text(0)!, q.text(1)!, Int(q.int(2)))) }
        return rows
    }

    static let columns = """
        id, dedupe_key, version, type, subtype, environment, bundle_id, original_transaction_id, transaction_id,
        apple_status, app_user_id, outcome, signed_at, received_at, body
        """

    static func record(_ s: Statement) -> NotificationRecord {
        NotificationRecord(
            id: s.int(0), dedupeKey: s.text(1)!, version: Int(s.int(2)), type: s.text(3)!, subtype: s.text(4),
            environment: s.text(5), bundleID: s.text(6), originalTransactionID: s.text(7), transactionID: s.text(8),
            appleStatus: s.optionalInt(9), appUserID: s.text(10), outcome: s.text(11)!, signedAt: s.optionalInt(12),
            receivedAt: s.int(13), body: s.text(14)!)
    }
}

/// One delivered notification (`notifications`).
package struct NotificationRecord: Sendable, Equatable {
    /// Row id; 0 before it is stored.
    package var id: Int64
    /// V2's `notificationUUID`; V1: `v1:` and the SHA-256 of the redacted body.
    package var dedupeKey: String
    /// 1 or 2.
    package var version: Int
    package var type: String
    package var subtype: String?
    /// `production` or `sandbox`.
    package var environment: String?
    package var bundleID: String?
    package var originalTransactionID: String?
    package var transactionID: String?
    /// V2 `data.status`: 1 active, 2 expired, 3 billing retry, 4 grace period, 5 revoked.
    package var appleStatus: Int64?
    package var appUserID: String?
    /// `applied`, `unchanged`, `recorded`, `pending_owner` or `attached`.
    package var outcome: String
    package var signedAt: Int64?
    package var receivedAt: Int64
    /// The body as delivered (V1's password redacted).
    package var body: String

    package init(
        id: Int64 = 0, dedupeKey: String, version: Int, type: String, subtype: String? = nil, environment: String? = nil,
        bundleID: String? = nil, originalTransactionID: String? = nil, transactionID: String? = nil,
        appleStatus: Int64? = nil, appUserID: String? = nil, outcome: String, signedAt: Int64? = nil, receivedAt: Int64,
        body: String
    ) {
        self.id = id
        self.dedupeKey = dedupeKey
        self.version = version
        self.type = type
        self.subtype = subtype
        self.environment = environment
        self.bundleID = bundleID
        self.originalTransactionID = originalTransactionID
        self.transactionID = transactionID
        self.appleStatus = appleStatus
        self.appUserID = appUserID
        self.outcome = outcome
        self.signedAt = signedAt
        self.receivedAt = receivedAt
        self.body = body
    }
}
