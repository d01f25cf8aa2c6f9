package import DatabaseEngine
package import Entitlements
import Identifiers

/// Reads and writes what Apple said about receipts (Migrations/0002_receipts.sql). Synchronous:
/// use it inside `DatabaseQueue.run`.
package struct ReceiptStore {
    /// What a save did.
    package struct Saved: Sendable, Equatable {
        /// The transaction and renewal rows that were new or different, plus the purchases that
        /// changed holder.
        package var changes: Int
        /// The original transactions that changed holder, in first-seen order.
        package var acquired: [String]
        /// The users whose facts changed (the holder first, then who lost a purchase to them);
        /// empty when nothing changed. Their derived state is behind until settled.
        package var changed: [String]

        package init(changes: Int, acquired: [String], changed: [String]) {
            self.changes = changes
            self.acquired = acquired
            self.changed = changed
        }
    }

    let db: Database

    package init(_ database: Database) { db = database }

    /// Stores `facts` held by `appUserID`, in one write transaction: the subscriber row when new,
    /// `appUserID` as the holder of each of their purchases (each change of holder recorded), and
    /// the facts; when anything changed, `appUserID` and any user who lost a purchase are marked
    /// changed (``factsChanged(_:at:)``). Re-saving the same facts changes no row. A renewal that
    /// changed is appended to `renewal_history`. Who may take a purchase from another user is the
    /// caller's decision. Derives nothing: see ``settle(_:hash:derivedFrom:version:now:)``.
    /// `holders`: who holds `facts.originals`, when the caller read it under their locks
    /// (``lock(_:for:)``) in its transaction; else read here.
    package func save(_ facts: VerifiedFacts, for appUserID: String, holders: [String?]? = nil, now: Int64) throws -> Saved {
        try db.transaction { () throws -> Saved in
            try lock(facts, for: appUserID)
            try addSubscriber(appUserID, now: now)
            var acquired: [String] = []
            var previousHolders: [String] = []
            for (original, holder) in zip(facts.originals, try holders ?? owners(of: facts.originals)) {
                if let holder, holder.isExactly(appUserID) { continue }  // bytes, as the database compares
                if let holder, !previousHolders.contains(where: { $0.isExactly(holder) }) { previousHolders.append(holder) }
                try db.cached(
                    """
                    INSERT INTO ownership (original_transaction_id, app_user_id, since) VALUES (?, ?, ?)
                    ON CONFLICT (original_transaction_id) DO UPDATE SET app_user_id = excluded.app_user_id, since = excluded.since
                    """
                ).bind([original, appUserID, now]).runLater()
                try db.cached(
                    "INSERT INTO ownership_transfers (original_transaction_id, from_app_user_id, to_app_user_id, at) VALUES (?, ?, ?, ?)"
                ).bind([original, holder, appUserID, now]).runLater()
                acquired.append(original)
            }
            let changes = acquired.count + (try writeFacts(facts, now: now))
            let changed = changes > 0 ? [appUserID] + previousHolders : []  // the previous holders lost a purchase
            try factsChanged(changed, at: now)
            return Saved(changes: changes, acquired: acquired, changed: changed)
        }
    }

    /// Stores facts without giving their purchases a holder (a notification before the app posted
    /// a receipt): they join the subscriber's facts when a user takes the purchase. Users who hold
    /// some of them already are marked changed, as `changed`.
    package func saveUnowned(_ facts: VerifiedFacts, now: Int64) throws -> Saved {
        try db.transaction {
            try lock(facts, for: nil)
            let changes = try writeFacts(facts, now: now)
            guard changes > 0 else { return Saved(changes: 0, acquired: [], changed: []) }
            var holders: [String] = []
            for holder in try owners(of: facts.originals).compactMap(\.self)
            where !holders.contains(where: { $0.isExactly(holder) }) {
                holders.append(holder)
            }
            try factsChanged(holders, at: now)
            return Saved(changes: changes, acquired: [], changed: holders)
        }
    }

    /// Makes other writers of the same purchases or user wait until the caller's transaction ends
    /// (``Database/lock(_:withNextRead:)``: nothing on SQLite). Call it before reading who holds a
    /// purchase in order to write: the locks travel with that read.
    package func lock(_ facts: VerifiedFacts, for appUserID: String?) throws {
        try lock(purchases: facts.originals, subscriber: appUserID)
    }

    /// ``lock(_:for:)`` by original transaction ids.
    package func lock(purchases originals: [String], subscriber appUserID: String?) throws {
        try db.lock(originals.map { "purchase:" + $0 } + (appUserID.map { ["subscriber:" + $0] } ?? []), withNextRead: true)
    }

    /// Adds the subscriber row of `appUserID` unless it exists, in the caller's transaction.
    package func addSubscriber(_ appUserID: String, now: Int64) throws {
        try db.cached(
            "INSERT INTO subscribers (app_user_id, created_at, updated_at, first_seen_at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING"
        ).bind([appUserID, now, now, now]).runLater()
    }

    /// Whether `appUserID` has a subscriber row (an alias never has one).
    package func isSubscriber(_ appUserID: String) throws -> Bool {
        let q = try db.cached("SELECT 1 FROM subscribers WHERE app_user_id = ?").bind([appUserID])
        defer { q.reset() }
        return try q.step()
    }

    /// Records that the facts of `appUserIDs` changed, in the caller's transaction: their facts
    /// revision moves (their derived state is now behind), their kept document goes (it may name
    /// an alias being erased: ``DocumentStore``) and each joins the ``ChangeLog``.
    package func factsChanged(_ appUserIDs: [String], at now: Int64) throws {
        let bump = try db.cached(
            """
            UPDATE subscribers SET facts_revision = facts_revision + 1, summary_until = 0, document = NULL,
                document_settings = NULL
            WHERE app_user_id = ?
            """)
        let log = ChangeLog(db)
        for user in appUserIDs {
            try bump.bind([user]).runLater()
            try log.append(user, at: now)
        }
    }

    /// Whether `token` is a UUID (8-4-4-4-12 hexadecimal digits, either case), the one format
    /// whose spelling may be normalised: Apple's `appAccountToken` is one, and so are the tokens
    /// receiptd makes. Any other account id (Google Play's `obfuscatedExternalAccountId`, an app
    /// user id) is exact bytes.
    package static func isUUID(_ token: String) -> Bool {
        let bytes = Array(token.utf8)
        guard bytes.count == 36 else { return false }
        for (i, b) in bytes.enumerated() {
            if [8, 13, 18, 23].contains(i) {
                guard b == 0x2D else { return false }
            } else {
                guard (0x30...0x39).contains(b) || (0x41...0x46).contains(b) || (0x61...0x66).contains(b) else { return false }
            }
        }
        return true
    }

    /// Upserts the rows of `facts`, never over rows Apple stated later; appends changed renewal
    /// info to the history. The number of rows new or changed.
    private func writeFacts(_ facts: VerifiedFacts, now: Int64) throws -> Int {
        // Several transactions a statement, and every upsert together: their counts are what
        // follows needs, and on PostgreSQL they take one round trip.
        let upserts = Self.factUpserts(facts, now: now)
        let counts = try db.runTogether(upserts.transactions + upserts.renewals)
        var changes = counts[..<upserts.transactions.count].reduce(0, +)
        let appendHistory = try db.cached(Self.insertHistorySQL)
        let lastObserved = try db.cached("SELECT max(observed_at) FROM renewal_history WHERE original_transaction_id = ?")
        for (r, count) in zip(facts.renewals, counts[upserts.transactions.count...]) where count > 0 {
            changes += 1
            var observed = now
            if let changed = facts.renewalChangedAt {
                // Apple's date of the change, kept in order: after the snapshot it replaces, not after now.
                let previous = try lastObserved.bind([r.fact.originalTransactionID]).firstInt() ?? .min
                observed = min(now, max(changed, previous))
            }
            try appendHistory.bind(Self.renewalValues(r.fact) + [r.rawJSON, observed] + Self.renewalCommitmentValues(r.fact))
                .runLater()
        }
        try writeLatestReceipt(facts, now: now)
        return changes
    }

    /// The upserts of `facts`' transactions (several a statement) and of their renewal info (one
    /// each): each statement's SQL and values. `counted`: each row written counts itself in a
    /// whole save's changes, and a renewal written appends its history in the same statement
    /// (``upsertTransactionCountedSQLs``, ``upsertRenewalCountedSQL``).
    static func factUpserts(_ facts: VerifiedFacts, now: Int64, counted: Bool = false) -> (
        transactions: [(sql: String, values: [(any StatementValue)?])], renewals: [(sql: String, values: [(any StatementValue)?])]
    ) {
        let stated = facts.statedAt ?? now
        var transactions: [(sql: String, values: [(any StatementValue)?])] = []
        for batch in batches(of: facts.purchases, by: \.fact.transactionID) {
            let values = batch.flatMap { p in
                purchaseValues(p) + [
                    p.rawJSON, now, now, p.fact.appAccountToken, stated, p.fact.store.rawValue, p.fact.appTransactionID,
                ] + commerceValues(p.fact.commerce)
            }
            transactions.append(((counted ? upsertTransactionCountedSQLs : upsertTransactionSQLs)[batch.count], values))
        }
        let renewals = facts.renewals.map { r in
            let values = renewalValues(r.fact) + [r.rawJSON, now, stated] + renewalCommitmentValues(r.fact)
            return counted
                ? (sql: upsertRenewalCountedSQL, values: values + [facts.renewalChangedAt, now])
                : (sql: upsertRenewalSQL, values: values)
        }
        return (transactions, renewals)
    }

    /// The receipt the store last sent for `facts`' purchases, when it sent one.
    func writeLatestReceipt(_ facts: VerifiedFacts, now: Int64) throws {
        guard let latest = facts.latestReceipt else { return }
        let upsertLatest = try db.cached(
            """
            INSERT INTO latest_receipts (original_transaction_id, receipt_data, environment, updated_at) VALUES (?, ?, ?, ?)
            ON CONFLICT (original_transaction_id) DO UPDATE SET receipt_data = excluded.receipt_data,
                environment = excluded.environment, updated_at = excluded.updated_at
            WHERE latest_receipts.receipt_data IS DISTINCT FROM excluded.receipt_data
                OR latest_receipts.environment IS DISTINCT FROM excluded.environment
            """)
        for original in facts.originals {
            try upsertLatest.bind([original, latest, facts.environment.rawValue, now]).runLater()
        }
    }
}
