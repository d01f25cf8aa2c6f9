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
    package func save(_ facts: VerifiedFacts, for appUserID: String, now: Int64) throws -> Saved {
        try db.transaction { () throws -> Saved in
            try lock(facts, for: appUserID)
            try addSubscriber(appUserID, now: now)
            var acquired: [String] = []
            var previousHolders: [String] = []
            for original in facts.originals {
                let holder = try owner(of: original)
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
            for original in facts.originals {
                if let holder = try owner(of: original), !holders.contains(where: { $0.isExactly(holder) }) {
                    holders.append(holder)
                }
            }
            try factsChanged(holders, at: now)
            return Saved(changes: changes, acquired: [], changed: holders)
        }
    }

    /// Makes other writers of the same purchases or user wait until the caller's transaction ends
    /// (``Database/lock(_:)``: nothing on SQLite). Call it before reading who holds a purchase in
    /// order to write.
    package func lock(_ facts: VerifiedFacts, for appUserID: String?) throws {
        try lock(purchases: facts.originals, subscriber: appUserID)
    }

    /// ``lock(_:for:)`` by original transaction ids.
    package func lock(purchases originals: [String], subscriber appUserID: String?) throws {
        try db.lock(originals.map { "purchase:" + $0 } + (appUserID.map { ["subscriber:" + $0] } ?? []))
    }

    /// Adds the subscriber row of `appUserID` unless it exists, in the caller's transaction.
    package func addSubscriber(_ appUserID: String, now: Int64) throws {
        try db.cached("INSERT INTO subscribers (app_user_id, created_at, updated_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING")
            .bind([appUserID, now, now]).runLater()
    }

    /// Whether `appUserID` has a subscriber row (an alias never has one).
    package func isSubscriber(_ appUserID: String) throws -> Bool {
        let q = try db.cached("SELECT 1 FROM subscribers WHERE app_user_id = ?").bind([appUserID])
        defer { q.reset() }
        return try q.step()
    }

    /// Records that the facts of `appUserIDs` changed, in the caller's transaction: their facts
    /// revision moves (their derived state is now behind) and each joins the ``ChangeLog``.
    package func factsChanged(_ appUserIDs: [String], at now: Int64) throws {
        let bump = try db.cached(
            "UPDATE subscribers SET facts_revision = facts_revision + 1, summary_until = 0 WHERE app_user_id = ?")
        let log = ChangeLog(db)
        for user in appUserIDs {
            try bump.bind([user]).runLater()
            try log.append(user, at: now)
        }
    }

    /// One stored transaction, with its app; nil when unknown.
    package func purchase(_ transactionID: String) throws -> Stated<Purchase>? {
        let q = try db.cached("SELECT \(Self.transactionColumns("t")) FROM transactions t WHERE t.transaction_id = ?")
            .bind([transactionID])
        return try q.step() ? Self.purchase(q) : nil
    }

    /// The latest expiry among a subscription's stored periods that end no later than `before`
    /// (nil: any): where the period after them began, when its store names no start.
    package func latestExpiry(of originalTransactionID: String, before: Int64?) throws -> Int64? {
        try db.cached(
            "SELECT max(expires_date) FROM transactions WHERE original_transaction_id = ? AND expires_date <= ?"
        ).bind([originalTransactionID, before ?? .max]).firstInt()
    }

    /// A Google Play order's stored periods: the order's own and its add-ons' (`<order>/<product>`).
    package func playOrder(_ orderID: String) throws -> [Stated<Purchase>] {
        let q = try db.cached(
            """
            SELECT \(Self.transactionColumns("t")) FROM transactions t WHERE t.store = 'play_store'
                AND (t.transaction_id = ?1 OR substr(t.transaction_id, 1, length(?1) + 1) = ?1 || '/')
            """
        ).bind([orderID])
        var found: [Stated<Purchase>] = []
        while try q.step() { found.append(Self.purchase(q)) }
        return found
    }

    /// Removes a Google Play token's placeholder periods (named by its reference while its
    /// payment was pending: `GPT.…`, and `GPT.…/<product>` for an add-on) that its newest read no
    /// longer states, once an order paid for them.
    package func forgetPlaceholders(of reference: String, keeping: [String]) throws {
        guard !keeping.contains(reference) else { return }
        try db.cached(
            """
            DELETE FROM transactions WHERE store = 'play_store'
                AND (transaction_id = ?1 OR substr(transaction_id, 1, length(?1) + 1) = ?1 || '/')
            """
        ).bind([reference]).run()
    }

    /// The app of an original transaction's purchases; nil when none is stored.
    package func bundleID(ofOriginal originalTransactionID: String) throws -> String? {
        let q = try db.cached("SELECT bundle_id FROM transactions WHERE original_transaction_id = ? LIMIT 1")
            .bind([originalTransactionID])
        defer { q.reset() }
        return try q.step() ? q.text(0) : nil
    }

    /// Who holds an original transaction now.
    package func owner(of originalTransactionID: String) throws -> String? {
        let q = try db.cached("SELECT app_user_id FROM ownership WHERE original_transaction_id = ?").bind([originalTransactionID]
        )
        return try q.step() ? q.text(0) : nil
    }

    /// The subscriber an `appAccountToken` points at: one whose id or alias is that UUID (any case),
    /// or whose token receiptd made it (`appStore.setAppAccountTokens`), else the holder of a
    /// purchase made with it.
    package func subscriber(forAccountToken token: String) throws -> String? {
        if let named = try subscriber(namedByToken: token) { return named }
        let uuid = Self.isUUID(token)
        let byPurchase = try db.cached(
            """
            SELECT o.app_user_id FROM transactions t JOIN ownership o ON o.original_transaction_id = t.original_transaction_id
            WHERE t.app_account_token = ? OR t.app_account_token = ? LIMIT 1
            """
        ).bind([uuid ? token.lowercased() : token, token])
        return try byPurchase.step() ? byPurchase.text(0) : nil
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

    /// The subscriber an `appAccountToken` names outright: their id or an alias is that UUID (any
    /// case), or it is the token receiptd made for them; nil when it names nobody (the app's own
    /// token, say).
    package func subscriber(namedByToken token: String) throws -> String? {
        guard Self.isUUID(token) else {
            // Not a UUID: exact bytes only (a Play account id `Bob` never names `bob`).
            if try isSubscriber(token) { return token }
            return try db.cached("SELECT app_user_id FROM aliases WHERE alias = ?").bind([token]).firstText()
        }
        let byID = try db.cached("SELECT app_user_id FROM subscribers WHERE lower(app_user_id) = lower(?) LIMIT 1").bind([token])
        if try byID.step() { return byID.text(0) }
        let byAlias = try db.cached("SELECT app_user_id FROM aliases WHERE lower(alias) = lower(?) LIMIT 1").bind([token])
        if try byAlias.step() { return byAlias.text(0) }
        return try db.cached("SELECT app_user_id FROM subscribers WHERE app_account_token = lower(?)").bind([token]).firstText()
    }

    /// Upserts the rows of `facts`, never over rows Apple stated later; appends changed renewal
    /// info to the history. The number of rows new or changed.
    private func writeFacts(_ facts: VerifiedFacts, now: Int64) throws -> Int {
        let stated = facts.statedAt ?? now
        var changes = 0
        // Several rows a statement: one round trip on PostgreSQL for what took one each.
        for batch in Self.batches(of: facts.purchases, by: \.fact.transactionID) {
            let values = batch.flatMap { p in
                Self.purchaseValues(p) + [
                    p.rawJSON, now, now, p.fact.appAccountToken, stated, p.fact.store.rawValue, p.fact.appTransactionID,
                ] + Self.commerceValues(p.fact.commerce)
            }
            try db.cached(Self.upsertTransactionSQL(rows: batch.count)).bind(values).run()
            changes += db.changes
        }
        let upsertRenewal = try db.cached(Self.upsertRenewalSQL)
        let appendHistory = try db.cached(Self.insertHistorySQL)
        let lastObserved = try db.cached("SELECT max(observed_at) FROM renewal_history WHERE original_transaction_id = ?")
        for r in facts.renewals {
            try upsertRenewal.bind(Self.renewalValues(r.fact) + [r.rawJSON, now, stated] + Self.renewalCommitmentValues(r.fact))
                .run()
            guard db.changes > 0 else { continue }
            changes += 1
            var observed = now
            if let changed = facts.renewalChangedAt {
                // Apple's date of the change, kept in order: after the snapshot it replaces, not after now.
                let previous = try lastObserved.bind([r.fact.originalTransactionID]).firstInt() ?? .min
                observed = min(now, max(changed, previous))
            }
            try appendHistory.bind(Self.renewalValues(r.fact) + [r.rawJSON, observed] + Self.renewalCommitmentValues(r.fact))
                .run()
        }
        if let latest = facts.latestReceipt {
            let upsertLatest = try db.cached(
                """
                INSERT INTO latest_receipts (original_transaction_id, receipt_data, environment, updated_at) VALUES (?, ?, ?, ?)
                ON CONFLICT (original_transaction_id) DO UPDATE SET receipt_data = excluded.receipt_data,
                    environment = excluded.environment, updated_at = excluded.updated_at
                WHERE latest_receipts.receipt_data IS DISTINCT FROM excluded.receipt_data
                    OR latest_receipts.environment IS DISTINCT FROM excluded.environment
                """)
            for original in facts.originals { try upsertLatest.bind([original, latest, facts.environment, now]).run() }
        }
        return changes
    }

    /// Records the state derived from a snapshot of `appUserID` taken at facts revision `revision`
    /// and version `version`: the document fingerprint `hash` (a different one bumps the version
    /// and joins the ``ChangeLog``) and that the derivation has caught up with those facts. A
    /// compare-and-set: when the facts or the version moved since the snapshot, nothing is written
    /// and the answer is nil (read again, derive again). Else the version after the call.
    package func settle(_ appUserID: String, hash: String, derivedFrom revision: Int64, version: Int64, now: Int64) throws
        -> Int64?
    {
        let update = try db.cached(
            """
            UPDATE subscribers SET version = version + CASE WHEN state_hash IS DISTINCT FROM ?1 THEN 1 ELSE 0 END, state_hash = ?1, derived_revision = ?2,
                updated_at = ?3
            WHERE app_user_id = ?4 AND facts_revision = ?2 AND version = ?5
            RETURNING version
            """
        ).bind([hash, revision, now, appUserID, version])
        guard try update.step() else { return nil }
        let after = update.int(0)
        update.reset()
        if after != version { try ChangeLog(db).append(appUserID, at: now) }
        return after
    }

    /// Subscriber ids in order, `limit` at a time after `after`.
    package func subscriberIDs(after: String?, limit: Int) throws -> [String] {
        let q = try db.cached("SELECT app_user_id FROM subscribers WHERE app_user_id > ? ORDER BY app_user_id LIMIT ?")
            .bind([after ?? "", Int64(limit)])
        var ids: [String] = []
        while try q.step() { ids.append(q.text(0)!) }
        return ids
    }

    /// Rewrites a transaction's derived columns (for re-derivation from its raw JSON).
    package func updateColumns(of p: Stated<Purchase>) throws {
        try db.cached(
            """
            UPDATE transactions SET transaction_id = ?, original_transaction_id = ?, product_id = ?, bundle_id = ?,
                environment = ?, purchase_date = ?, original_purchase_date = ?, expires_date = ?, cancellation_date = ?,
                cancellation_reason = ?, quantity = ?, is_trial_period = ?, is_in_intro_offer_period = ?, is_upgraded = ?,
                ownership_type = ?, subscription_group_id = ?, web_order_line_item_id = ?, promotional_offer_id = ?,
                offer_code_ref_name = ?, app_transaction_id = coalesce(?, app_transaction_id),
                \(Self.commerceColumns.map { "\($0) = ?" }.joined(separator: ", "))
            WHERE transaction_id = ?
            """
        ).bind(
            Self.purchaseValues(p) + [p.fact.appTransactionID] + Self.commerceValues(p.fact.commerce) + [p.fact.transactionID]
        ).run()
    }

    /// Rewrites a renewal snapshot's derived columns, and the current row's when it is the newest.
    package func updateColumns(of snapshot: Stated<RenewalObservation>) throws {
        // Every column but the subscription's id and its environment, which a snapshot never changes.
        var values = Self.renewalValues(snapshot.fact.renewal)
        values.remove(at: 11)
        values.removeFirst()
        values += Self.renewalCommitmentValues(snapshot.fact.renewal)
        let columns = """
            product_id = ?, auto_renew_product_id = ?, auto_renew_status = ?, expiration_intent = ?,
            grace_period_expires_date = ?, is_in_billing_retry_period = ?, price_consent_status = ?,
            price_increase_status = ?, offer_code_ref_name = ?, promotional_offer_id = ?, store_state = ?, auto_resume_date = ?,
            \(Self.renewalCommitmentColumns.map { "\($0) = ?" }.joined(separator: ", "))
            """
        try db.cached("UPDATE renewal_history SET \(columns) WHERE id = ?").bind(values + [snapshot.fact.sequence]).run()
        try db.cached("UPDATE pending_renewal_info SET \(columns) WHERE original_transaction_id = ? AND raw_json = ?")
            .bind(values + [snapshot.fact.renewal.originalTransactionID, snapshot.rawJSON]).run()
    }

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
        ).bind([entry.appUserID, entry.environment, entry.appleStatus, entry.outcome, entry.attempts, entry.latencyMs, now])
            .runLater()
    }
}

extension Statement {
    /// The column as an integer, nil when NULL.
    package func optionalInt(_ column: Int32) -> Int64? { isNull(column) ? nil : int(column) }

    /// The first column of the first row as an integer; nil when there is no row or it is NULL.
    package func firstInt() throws -> Int64? { try step() ? optionalInt(0) : nil }

    /// The first column of the first row as text; nil when there is no row or it is NULL.
    package func firstText() throws -> String? { try step() ? text(0) : nil }
}

/// A purchase that has moved between app users (`GET /v1/admin/shared-receipts`).
package struct SharedReceipt: Sendable, Equatable {
    package var originalTransactionID: String
    /// How many distinct users have held it.
    package var users: Int
    /// Who holds it now.
    package var holder: String?
    /// Every change of holder, oldest first (the first one has no `from`).
    package var transfers: [Transfer]
}

extension ReceiptStore {
    /// Purchases held by more than `moreThan` distinct users, most users first, then by id;
    /// `after` continues from the last row of the previous page.
    package func sharedReceipts(moreThan: Int, limit: Int, after: (users: Int, original: String)? = nil) throws
        -> [SharedReceipt]
    {
        let groups = try db.cached(
            """
            SELECT original_transaction_id, users FROM (
                SELECT original_transaction_id, count(DISTINCT to_app_user_id) AS users
                FROM ownership_transfers GROUP BY original_transaction_id
            ) AS shared
            WHERE users > ?1 AND (CAST(?2 AS BIGINT) IS NULL OR users < ?2 OR (users = ?2 AND original_transaction_id > ?3))
            ORDER BY users DESC, original_transaction_id LIMIT ?4
            """
        ).bind([Int64(moreThan), after.map { Int64($0.users) }, after?.original, Int64(limit)])
        var found: [SharedReceipt] = []
        while try groups.step() {
            found.append(
                SharedReceipt(originalTransactionID: groups.text(0)!, users: Int(groups.int(1)), holder: nil, transfers: []))
        }
        let moves = try db.cached(
            """
            SELECT from_app_user_id, to_app_user_id, at,
                   COALESCE((SELECT t.product_id FROM transactions t WHERE t.original_transaction_id = ?1
                    ORDER BY t.purchase_date DESC, t.transaction_id DESC LIMIT 1), product_id)
            FROM ownership_transfers WHERE original_transaction_id = ?1 ORDER BY at, id
            """)
        for i in found.indices {
            let original = found[i].originalTransactionID
            found[i].holder = try owner(of: original)
            _ = try moves.bind([original])
            while try moves.step() {
                found[i].transfers.append(
                    Transfer(
                        originalTransactionID: original, productID: moves.text(3), from: moves.text(0), to: moves.text(1)!,
                        at: moves.int(2)))
            }
        }
        return found
    }
}
