package import DatabaseEngine
package import Entitlements
import Identifiers

/// One Apple Account's AppTransaction as stored for a person (`app_transactions`).
package struct AppTransactionRecord: Sendable, Equatable {
    package var appUserID: String
    package var appTransactionID: String
    package var bundleID: String
    /// `production`, `sandbox` or `xcode`.
    package var environment: String
    package var originalApplicationVersion: String?
    package var originalPurchaseDate: Int64?
    package var originalPlatform: String?
    package var rawJSON: String

    package init(
        appUserID: String, appTransactionID: String, bundleID: String, environment: String, originalApplicationVersion: String?,
        originalPurchaseDate: Int64?, originalPlatform: String?, rawJSON: String
    ) {
        self.appUserID = appUserID
        self.appTransactionID = appTransactionID
        self.bundleID = bundleID
        self.environment = environment
        self.originalApplicationVersion = originalApplicationVersion
        self.originalPurchaseDate = originalPurchaseDate
        self.originalPlatform = originalPlatform
        self.rawJSON = rawJSON
    }
}

/// One Apple Account (an `appTransactionId`) whose AppTransaction was posted under several app
/// user ids: people sharing an Apple Account, or one person under several ids.
package struct SharedAppAccount: Sendable, Equatable {
    package var appTransactionID: String
    package var users: Int
    /// The app user ids it was posted under, in byte order.
    package var appUserIDs: [String]
}

/// AppTransactions per person (Migrations/0026_app_transactions.sql).
package struct AppTransactionStore {
    let db: Database

    package init(_ db: Database) { self.db = db }

    /// Stores it for the person (again: updated), whose facts then changed (grandfathering reads
    /// it); the other ids holding the same Apple Account.
    @discardableResult
    package func save(_ r: AppTransactionRecord, now: Int64) throws -> [String] {
        try db.cached(
            """
            INSERT INTO app_transactions (app_user_id, app_transaction_id, bundle_id, environment, original_application_version,
                original_purchase_date, original_platform, raw_json, first_seen_at, updated_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (app_user_id, app_transaction_id) DO UPDATE SET bundle_id = excluded.bundle_id,
                environment = excluded.environment, original_application_version = excluded.original_application_version,
                original_purchase_date = excluded.original_purchase_date, original_platform = excluded.original_platform,
                raw_json = excluded.raw_json, updated_at = excluded.updated_at
            """
        ).bind([
            r.appUserID, r.appTransactionID, r.bundleID, r.environment, r.originalApplicationVersion, r.originalPurchaseDate,
            r.originalPlatform, r.rawJSON, now, now,
        ]).run()
        try ReceiptStore(db).factsChanged([r.appUserID], at: now)
        return try sharing(r.appTransactionID, except: r.appUserID)
    }

    /// The other app user ids the same AppTransaction was posted for.
    package func sharing(_ appTransactionID: String, except appUserID: String) throws -> [String] {
        let q = try db.cached(
            "SELECT app_user_id FROM app_transactions WHERE app_transaction_id = ? AND app_user_id <> ? ORDER BY app_user_id"
        ).bind([appTransactionID, appUserID])
        var ids: [String] = []
        while try q.step() { ids.append(q.text(0)!) }
        return ids
    }

    /// The app user ids of one Apple Account besides `ids` (a person's canonical id and
    /// aliases): who posted one of `appTransactionIDs`' AppTransactions, or holds a purchase Apple
    /// stated under one of them.
    package func users(of appTransactionIDs: Set<String>, except ids: [String]) throws -> [String] {
        let posted = try db.cached("SELECT app_user_id FROM app_transactions WHERE app_transaction_id = ?")
        let holding = try db.cached(
            "SELECT DISTINCT o.app_user_id FROM transactions t JOIN ownership o "
                + "ON o.original_transaction_id = t.original_transaction_id WHERE t.app_transaction_id = ?")
        var found: [String] = []
        for account in appTransactionIDs.sorted() {
            for q in [posted, holding] {
                _ = try q.bind([account])
                while try q.step() {
                    let user = q.text(0)!
                    if !ids.contains(where: { $0.isExactly(user) }) && !found.contains(where: { $0.isExactly(user) }) {
                        found.append(user)
                    }
                }
            }
        }
        return found
    }

    /// One id's AppTransactions (``facts(of:)``; ``ReceiptStore/subscriber(_:)`` prefetches it).
    static let factsSQL = """
        SELECT app_transaction_id, original_application_version, original_purchase_date, original_platform, environment
        FROM app_transactions WHERE app_user_id = ?
        """

    /// The AppTransactions posted under `ids` (a person's canonical id and aliases), as facts,
    /// oldest first.
    package func facts(of ids: [String]) throws -> [AppTransaction] {
        let q = try db.cached(Self.factsSQL)
        var out: [(Int64, AppTransaction)] = []
        for id in ids {
            _ = try q.bind([id])
            while try q.step() {
                out.append(
                    (
                        q.optionalInt(2) ?? 0,
                        AppTransaction(
                            appTransactionID: q.text(0)!, originalApplicationVersion: q.text(1),
                            originalPurchaseDate: q.optionalInt(2), originalPlatform: q.text(3), environment: q.text(4)!)
                    ))
            }
        }
        return out.sorted { ($0.0, $0.1.appTransactionID) < ($1.0, $1.1.appTransactionID) }.map(\.1)
    }

    /// The person's newest AppTransaction among `ids` (their canonical id and aliases).
    package func newest(of ids: [String]) throws -> AppTransactionRecord? {
        guard !ids.isEmpty else { return nil }
        let q = try db.cached(
            """
            SELECT app_user_id, app_transaction_id, bundle_id, environment, original_application_version, original_purchase_date,
                original_platform, raw_json
            FROM app_transactions WHERE app_user_id IN (\(Array(repeating: "?", count: ids.count).joined(separator: ", ")))
            ORDER BY updated_at DESC LIMIT 1
            """
        ).bind(ids)
        guard try q.step() else { return nil }
        return AppTransactionRecord(
            appUserID: q.text(0)!, appTransactionID: q.text(1)!, bundleID: q.text(2)!, environment: q.text(3)!,
            originalApplicationVersion: q.text(4), originalPurchaseDate: q.optionalInt(5), originalPlatform: q.text(6),
            rawJSON: q.text(7)!)
    }

    /// Apple Accounts posted under more than `moreThan` app user ids, most ids first, then by
    /// `appTransactionId`; after `after` (a page's last row) when given.
    package func shared(moreThan: Int, limit: Int, after: (users: Int, id: String)?) throws -> [SharedAppAccount] {
        var sql = "SELECT app_transaction_id, count(*) FROM app_transactions GROUP BY app_transaction_id HAVING count(*) > ?"
        var values: [(any StatementValue)?] = [Int64(moreThan)]
        if let after {
            sql += " AND (count(*) < ? OR (count(*) = ? AND app_transaction_id > ?))"
            values += [Int64(after.users), Int64(after.users), after.id]
        }
        let q = try db.prepare(sql + " ORDER BY count(*) DESC, app_transaction_id LIMIT ?").bind(values + [Int64(limit)])
        var rows: [SharedAppAccount] = []
        while try q.step() { rows.append(SharedAppAccount(appTransactionID: q.text(0)!, users: Int(q.int(1)), appUserIDs: [])) }
        let ids = try db.cached("SELECT app_user_id FROM app_transactions WHERE app_transaction_id = ? ORDER BY app_user_id")
        for i in rows.indices {
            _ = try ids.bind([rows[i].appTransactionID])
            while try ids.step() { rows[i].appUserIDs.append(ids.text(0)!) }
        }
        return rows
    }
}
