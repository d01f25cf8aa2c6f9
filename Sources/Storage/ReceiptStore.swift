import Entitlements
import Identifiers

/// Reads and writes what Apple said about receipts (Migrations/0002_receipts.sql). Synchronous:
/// use it inside `DatabaseQueue.run`.
public struct ReceiptStore {
    /// What a save did.
    public struct Saved: Sendable, Equatable {
        /// The transaction and renewal rows that were new or different, plus the purchases that
        /// changed holder.
        public var changes: Int
        /// The original transactions that changed holder, in first-seen order.
        public var acquired: [String]
        /// The users whose facts changed (the holder first, then who lost a purchase to them);
        /// empty when nothing changed. Their derived state is behind until settled.
        public var changed: [String]

        public init(changes: Int, acquired: [String], changed: [String]) {
            self.changes = changes
            self.acquired = acquired
            self.changed = changed
        }
    }

    private let db: Database

    public init(_ database: Database) { db = database }

    /// Stores `facts` held by `appUserID`, in one write transaction: the subscriber row when new,
    /// `appUserID` as the holder of each of their purchases (each change of holder recorded), and
    /// the facts; when anything changed, `appUserID` and any user who lost a purchase are marked
    /// changed (``factsChanged(_:at:)``). Re-saving the same facts changes no row. A renewal that
    /// changed is appended to `renewal_history`. Who may take a purchase from another user is the
    /// caller's decision. Derives nothing: see ``settle(_:hash:derivedFrom:version:now:)``.
    public func save(_ facts: VerifiedFacts, for appUserID: String, now: Int64) throws -> Saved {
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
    public func saveUnowned(_ facts: VerifiedFacts, now: Int64) throws -> Saved {
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
    public func lock(_ facts: VerifiedFacts, for appUserID: String?) throws {
        try lock(purchases: facts.originals, subscriber: appUserID)
    }

    /// ``lock(_:for:)`` by original transaction ids.
    public func lock(purchases originals: [String], subscriber appUserID: String?) throws {
        try db.lock(originals.map { "purchase:" + $0 } + (appUserID.map { ["subscriber:" + $0] } ?? []))
    }

    /// Adds the subscriber row of `appUserID` unless it exists, in the caller's transaction.
    public func addSubscriber(_ appUserID: String, now: Int64) throws {
        try db.cached("INSERT INTO subscribers (app_user_id, created_at, updated_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING")
            .bind([appUserID, now, now]).runLater()
    }

    /// Whether `appUserID` has a subscriber row (an alias never has one).
    public func isSubscriber(_ appUserID: String) throws -> Bool {
        let q = try db.cached("SELECT 1 FROM subscribers WHERE app_user_id = ?").bind([appUserID])
        defer { q.reset() }
        return try q.step()
    }

    /// Records that the facts of `appUserIDs` changed, in the caller's transaction: their facts
    /// revision moves (their derived state is now behind) and each joins the ``ChangeLog``.
    public func factsChanged(_ appUserIDs: [String], at now: Int64) throws {
        let bump = try db.cached(
            "UPDATE subscribers SET facts_revision = facts_revision + 1, summary_until = 0 WHERE app_user_id = ?")
        let log = ChangeLog(db)
        for user in appUserIDs {
            try bump.bind([user]).runLater()
            try log.append(user, at: now)
        }
    }

    /// One stored transaction, with its app; nil when unknown.
    public func purchase(_ transactionID: String) throws -> Stated<Purchase>? {
        let q = try db.cached("SELECT \(Self.transactionColumns("t")) FROM transactions t WHERE t.transaction_id = ?")
            .bind([transactionID])
        return try q.step() ? Self.purchase(q) : nil
    }

    /// The latest expiry among a subscription's stored periods that end no later than `before`
    /// (nil: any): where the period after them began, when its store names no start.
    public func latestExpiry(of originalTransactionID: String, before: Int64?) throws -> Int64? {
        try db.cached(
            "SELECT max(expires_date) FROM transactions WHERE original_transaction_id = ? AND expires_date <= ?"
        ).bind([originalTransactionID, before ?? .max]).firstInt()
    }

    /// A Google Play order's stored periods: the order's own and its add-ons' (`<order>/<product>`).
    public func playOrder(_ orderID: String) throws -> [Stated<Purchase>] {
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
    public func forgetPlaceholders(of reference: String, keeping: [String]) throws {
        guard !keeping.contains(reference) else { return }
        try db.cached(
            """
            DELETE FROM transactions WHERE store = 'play_store'
                AND (transaction_id = ?1 OR substr(transaction_id, 1, length(?1) + 1) = ?1 || '/')
            """
        ).bind([reference]).run()
    }

    /// The app of an original transaction's purchases; nil when none is stored.
    public func bundleID(ofOriginal originalTransactionID: String) throws -> String? {
        let q = try db.cached("SELECT bundle_id FROM transactions WHERE original_transaction_id = ? LIMIT 1")
            .bind([originalTransactionID])
        defer { q.reset() }
        return try q.step() ? q.text(0) : nil
    }

    /// Who holds an original transaction now.
    public func owner(of originalTransactionID: String) throws -> String? {
        let q = try db.cached("SELECT app_user_id FROM ownership WHERE original_transaction_id = ?").bind([originalTransactionID]
        )
        return try q.step() ? q.text(0) : nil
    }

    /// The subscriber an `appAccountToken` points at: one whose id or alias is that UUID (any case),
    /// or whose token receiptd made it (`appStore.setAppAccountTokens`), else the holder of a
    /// purchase made with it.
    public func subscriber(forAccountToken token: String) throws -> String? {
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
    public static func isUUID(_ token: String) -> Bool {
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
    public func subscriber(namedByToken token: String) throws -> String? {
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

    /// The subscriber, every transaction and renewal snapshot of the purchases they hold, and the
    /// transfers that concern them; nil when unknown.
    /// An alias reads as the subscriber it names (``SubscriberRecord/appUserID`` is then the canonical id).
    public func subscriber(_ requestedID: String) throws -> SubscriberRecord? {
        let head = try db.cached(
            "SELECT version, state_hash, facts_revision, derived_revision, summary_until FROM subscribers WHERE app_user_id = ?"
        ).bind([requestedID])
        // No ORDER BY, no IN (SELECT …): each would open a temporary B-tree per statement, which was
        // a third of an uncached read. The rows are few; they are ordered here, as SQLite would.
        let transactions = try db.cached(
            """
            SELECT \(Self.transactionColumns("t"))
            FROM ownership o JOIN transactions t ON t.original_transaction_id = o.original_transaction_id
            WHERE o.app_user_id = ?
            """)
        let history = try db.cached(
            """
            SELECT h.id, h.observed_at, \(Self.renewalColumns("h"))
            FROM ownership o JOIN renewal_history h ON h.original_transaction_id = o.original_transaction_id
            WHERE o.app_user_id = ?
            """)
        // The moves of the purchases they hold, then those to or from them (a purchase taken away).
        let held = try db.cached(
            """
            SELECT m.id, m.original_transaction_id, m.from_app_user_id, m.to_app_user_id, m.at, m.product_id
            FROM ownership o JOIN ownership_transfers m ON m.original_transaction_id = o.original_transaction_id
            WHERE o.app_user_id = ?
            """)
        let theirs = try db.cached(
            """
            SELECT id, original_transaction_id, from_app_user_id, to_app_user_id, at, product_id FROM ownership_transfers
            WHERE from_app_user_id = ?1 OR to_app_user_id = ?1
            """)
        // On PostgreSQL every read of the id as given (a subscriber's own id, mostly) goes out at
        // once, in one round trip; each is then stepped through below, or by the store that reads it.
        // What is not read (an unknown id, an alias) is dropped on return: a later read in the
        // same transaction, after a write, must not find it.
        let prefetched =
            [head, transactions, history, held, theirs]
            + (try [Self.aliasesSQL, PromotionStore.promotionsSQL, AppTransactionStore.factsSQL].map { try db.cached($0) })
        defer { for statement in prefetched { statement.reset() } }
        try db.prefetch(try prefetched.map { try $0.bind([requestedID]) })
        // An alias has no subscriber row: its rows are read again for the id it names.
        var appUserID = requestedID
        if try !head.step() {
            appUserID = try canonical(requestedID)
            guard !appUserID.isExactly(requestedID), try head.bind([appUserID]).step() else { return nil }
        }
        let (version, stateHash, factsRevision, derivedRevision) = (head.int(0), head.text(1), head.int(2), head.int(3))
        let summaryUntil = head.int(4)
        head.reset()
        try transactions.bind([appUserID])
        var purchases: [Stated<Purchase>] = []
        while try transactions.step() { purchases.append(Self.purchase(transactions)) }
        purchases.sort {
            Self.precedes(($0.fact.purchaseDate, $0.fact.transactionID), ($1.fact.purchaseDate, $1.fact.transactionID))
        }
        try history.bind([appUserID])
        var renewals: [Stated<RenewalObservation>] = []
        while try history.step() {
            let stated = Self.renewal(history, from: 2)
            renewals.append(
                Stated(
                    RenewalObservation(observedAt: history.int(1), sequence: history.int(0), renewal: stated.fact),
                    rawJSON: stated.rawJSON))
        }
        renewals.sort { ($0.fact.observedAt, $0.fact.sequence) < ($1.fact.observedAt, $1.fact.sequence) }
        try held.bind([appUserID])
        var moves: [Int64: Transfer] = [:]
        func collect(_ q: Statement) throws {
            while try q.step() {
                moves[q.int(0)] = Transfer(
                    originalTransactionID: q.text(1)!, productID: q.text(5), from: q.text(2), to: q.text(3)!, at: q.int(4))
            }
        }
        try collect(held)
        let aliases = try self.aliases(of: appUserID)
        for id in [appUserID] + aliases.map(\.appUserID) { try collect(theirs.bind([id])) }
        // Named by the product of the purchase's newest transaction.
        var products: [Identifier: String] = [:]
        for p in purchases { products[Identifier(p.fact.originalTransactionID)] = p.fact.productID }
        var transfers: [Transfer] = []
        for (_, move) in moves.sorted(by: { ($0.value.at, $0.key) < ($1.value.at, $1.key) }) {
            var move = move
            // A purchase erased with another person has no transactions left: its move kept the product.
            move.productID =
                try products[Identifier(move.originalTransactionID)] ?? move.productID
                ?? newestProduct(of: move.originalTransactionID)
            transfers.append(move)
        }
        return SubscriberRecord(
            appUserID: appUserID, version: version, stateHash: stateHash, factsRevision: factsRevision,
            derivedRevision: derivedRevision, purchases: purchases, renewals: renewals, transfers: transfers, aliases: aliases,
            promotions: try PromotionStore(db).promotions(of: appUserID),
            appTransactions: try AppTransactionStore(db).facts(of: [appUserID] + aliases.map(\.appUserID)),
            summaryUntil: summaryUntil)
    }

    /// The subscriber `appUserID` names: the one it is an alias of, else itself (known or not).
    public func canonical(_ appUserID: String) throws -> String {
        let q = try db.cached("SELECT app_user_id FROM aliases WHERE alias = ?").bind([appUserID])
        defer { q.reset() }
        return try q.step() ? q.text(0)! : appUserID
    }

    /// A subscriber's aliases (``aliases(of:)``, prefetched by ``subscriber(_:)``).
    static let aliasesSQL = "SELECT alias, at FROM aliases WHERE app_user_id = ?"

    /// `appUserID`'s aliases, oldest first (then by bytes).
    public func aliases(of appUserID: String) throws -> [Alias] {
        let q = try db.cached(Self.aliasesSQL).bind([appUserID])
        var aliases: [Alias] = []
        while try q.step() { aliases.append(Alias(appUserID: q.text(0)!, at: q.int(1))) }
        return aliases.sorted { $0.at != $1.at ? $0.at < $1.at : $0.appUserID.utf8.lexicographicallyPrecedes($1.appUserID.utf8) }
    }

    /// The product of the newest transaction of a purchase (by purchase date, then id).
    /// The product of the newest transaction of the purchase `originalTransactionID`.
    public func newestProduct(of originalTransactionID: String) throws -> String? {
        let q = try db.cached(
            """
            SELECT product_id FROM transactions WHERE original_transaction_id = ?
            ORDER BY purchase_date DESC, transaction_id DESC LIMIT 1
            """
        ).bind([originalTransactionID])
        defer { q.reset() }
        return try q.step() ? q.text(0) : nil
    }

    /// SQLite's ascending order of `(purchase_date, transaction_id)`: NULL first, text by bytes.
    static func precedes(_ a: (Int64?, String), _ b: (Int64?, String)) -> Bool {
        switch (a.0, b.0) {
        case (nil, .some): return true
        case (.some, nil): return false
        case (let x?, let y?) where x != y: return x < y
        default: break
        }
        return a.1.utf8.lexicographicallyPrecedes(b.1.utf8)
    }

    /// Records the state derived from a snapshot of `appUserID` taken at facts revision `revision`
    /// and version `version`: the document fingerprint `hash` (a different one bumps the version
    /// and joins the ``ChangeLog``) and that the derivation has caught up with those facts. A
    /// compare-and-set: when the facts or the version moved since the snapshot, nothing is written
    /// and the answer is nil (read again, derive again). Else the version after the call.
    public func settle(_ appUserID: String, hash: String, derivedFrom revision: Int64, version: Int64, now: Int64) throws
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
    public func subscriberIDs(after: String?, limit: Int) throws -> [String] {
        let q = try db.cached("SELECT app_user_id FROM subscribers WHERE app_user_id > ? ORDER BY app_user_id LIMIT ?")
            .bind([after ?? "", Int64(limit)])
        var ids: [String] = []
        while try q.step() { ids.append(q.text(0)!) }
        return ids
    }

    /// Rewrites a transaction's derived columns (for re-derivation from its raw JSON).
    public func updateColumns(of p: Stated<Purchase>) throws {
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
    public func updateColumns(of snapshot: Stated<RenewalObservation>) throws {
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
    public func lastVerifiedAt(_ appUserID: String) throws -> Int64? {
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
    public func verificationCounts(from: Int64, to: Int64) throws -> [(outcome: String, count: Int)] {
        let q = try db.cached(
            "SELECT outcome, count(*) FROM verifications WHERE at >= ? AND at < ? GROUP BY outcome ORDER BY outcome"
        ).bind([from, to])
        var rows: [(String, Int)] = []
        while try q.step() { rows.append((q.text(0)!, Int(q.int(1)))) }
        return rows
    }

    /// ``log(_:at:)`` for work that began at `begun` (before a store was asked): nothing when the
    /// person was erased since (``ErasedIDs``).
    public func log(_ entry: VerificationLogEntry, at now: Int64, unlessErasedSince begun: Int64) throws {
        if let user = entry.appUserID, try ErasedIDs(db).anyErased([user], since: begun) { return }
        try log(entry, at: now)
    }

    public func log(_ entry: VerificationLogEntry, at now: Int64) throws {
        try db.cached(
            "INSERT INTO verifications (app_user_id, environment, apple_status, outcome, attempts, latency_ms, at) VALUES (?, ?, ?, ?, ?, ?, ?)"
        ).bind([entry.appUserID, entry.environment, entry.appleStatus, entry.outcome, entry.attempts, entry.latencyMs, now])
            .runLater()
    }

    /// `rawJSON: false` reads an empty text in place of the raw payload, for readers that never
    /// look at it (the charts: a kilobyte a transaction they would copy for nothing).
    static func transactionColumns(_ t: String, rawJSON: Bool = true) -> String {
        [
            "transaction_id", "original_transaction_id", "product_id", "bundle_id", "environment", "purchase_date",
            "original_purchase_date", "expires_date", "cancellation_date", "cancellation_reason", "quantity", "is_trial_period",
            "is_in_intro_offer_period", "is_upgraded", "ownership_type", "subscription_group_id", "web_order_line_item_id",
            "promotional_offer_id", "offer_code_ref_name", "raw_json", "app_account_token", "store", "app_transaction_id",
            "reversed_refund_date", "refund_reversed_at",
        ].map { $0 == "raw_json" && !rawJSON ? "''" : "\(t).\($0)" }.joined(separator: ", ") + ", "
            + commerceColumns.map { "\(t).\($0)" }.joined(separator: ", ")
    }

    /// Where ``transactionColumns(_:rawJSON:)``'s commerce columns begin; the columns a caller
    /// selects after them begin at `transactionCommerceColumn + commerceColumns.count`.
    static let transactionCommerceColumn: Int32 = 25

    /// A transaction's money and terms (Migrations/0016_money.sql), after its other columns.
    static let commerceColumns = [
        "storefront", "offer_type", "offer_discount_type", "offer_period", "transaction_reason", "revocation_type",
        "revocation_percentage", "billing_plan_type", "commitment_period_number", "commitment_total_periods",
        "commitment_price", "commitment_expires_date", "price", "currency", "price_source",
    ]

    /// ``commerceColumns`` but the price's three: the storefront, the offer, the refund, the commitment.
    static let termColumns = Array(commerceColumns.prefix(12))

    static func commerce(_ s: Statement, from c: Int32) -> Commerce {
        var price: Price?
        if let milliunits = s.optionalInt(c + 12), let currency = s.text(c + 13),
            let source = s.text(c + 14).flatMap(PriceSource.init(rawValue:))
        {
            price = Price(milliunits: milliunits, currency: currency, source: source)
        }
        let commitment = Commitment(
            billingPeriodNumber: s.optionalInt(c + 8), totalBillingPeriods: s.optionalInt(c + 9), price: s.optionalInt(c + 10),
            expiresDate: s.optionalInt(c + 11))
        return Commerce(
            price: price, storefront: s.text(c), offerType: s.optionalInt(c + 1), offerDiscountType: s.text(c + 2),
            offerPeriod: s.text(c + 3), transactionReason: s.text(c + 4), revocationType: s.text(c + 5),
            revocationPercentage: s.optionalInt(c + 6), billingPlanType: s.text(c + 7),
            commitment: commitment == Commitment() ? nil : commitment)
    }

    /// storefront … price_source, in ``commerceColumns``' order.
    static func commerceValues(_ c: Commerce) -> [(any StatementValue)?] {
        [
            c.storefront, c.offerType, c.offerDiscountType, c.offerPeriod, c.transactionReason, c.revocationType,
            c.revocationPercentage, c.billingPlanType, c.commitment?.billingPeriodNumber, c.commitment?.totalBillingPeriods,
            c.commitment?.price, c.commitment?.expiresDate, c.price?.milliunits, c.price?.currency, c.price?.source.rawValue,
        ]
    }

    static func purchase(_ s: Statement) -> Stated<Purchase> {
        Stated(
            Purchase(
                transactionID: s.text(0)!, originalTransactionID: s.text(1)!, productID: s.text(2)!,
                purchaseDate: s.optionalInt(5), originalPurchaseDate: s.optionalInt(6), expiresDate: s.optionalInt(7),
                cancellationDate: s.optionalInt(8), cancellationReason: s.text(9), isTrialPeriod: s.int(11) == 1,
                isInIntroOfferPeriod: s.int(12) == 1, isUpgraded: s.int(13) == 1, ownershipType: s.text(14),
                environment: s.text(4)!, subscriptionGroupID: s.text(15), promotionalOfferID: s.text(17),
                offerCodeRefName: s.text(18), quantity: s.optionalInt(10), webOrderLineItemID: s.text(16),
                appAccountToken: s.text(20), appTransactionID: s.text(22),
                refundReversal: s.optionalInt(23).flatMap { refunded in
                    s.optionalInt(24).map { RefundReversal(refundedAt: refunded, reversedAt: $0) }
                },
                store: s.text(21).flatMap(Store.init(rawValue:)) ?? .appStore,
                commerce: commerce(s, from: transactionCommerceColumn)),
            bundleID: s.text(3)!, rawJSON: s.text(19)!)
    }

    /// transaction_id … offer_code_ref_name, in the column order of `transactions`.
    static func purchaseValues(_ stated: Stated<Purchase>) -> [(any StatementValue)?] {
        let p = stated.fact
        return [
            p.transactionID, p.originalTransactionID, p.productID, stated.bundleID ?? "", p.environment, p.purchaseDate,
            p.originalPurchaseDate, p.expiresDate, p.cancellationDate, p.cancellationReason, p.quantity,
            p.isTrialPeriod ? 1 : 0, p.isInIntroOfferPeriod ? 1 : 0, p.isUpgraded ? 1 : 0, p.ownershipType,
            p.subscriptionGroupID, p.webOrderLineItemID, p.promotionalOfferID, p.offerCodeRefName,
        ]
    }

    static func renewalColumns(_ r: String) -> String {
        [
            "original_transaction_id", "product_id", "auto_renew_product_id", "auto_renew_status", "expiration_intent",
            "grace_period_expires_date", "is_in_billing_retry_period", "price_consent_status", "price_increase_status",
            "offer_code_ref_name", "promotional_offer_id", "environment", "store_state", "auto_resume_date", "raw_json",
        ].map { "\(r).\($0)" }.joined(separator: ", ") + ", "
            + renewalCommitmentColumns.map { "\(r).\($0)" }.joined(separator: ", ")
    }

    /// A commitment plan's renewal info (Migrations/0031), after the raw JSON in both renewal tables' reads.
    static let renewalCommitmentColumns = [
        "renewal_billing_plan_type", "commitment_auto_renew_status", "commitment_auto_renew_product_id",
        "commitment_renewal_date", "commitment_renewal_price", "commitment_renewal_billing_plan_type",
    ]

    static func renewalCommitmentValues(_ r: Renewal) -> [(any StatementValue)?] {
        let c = r.commitment
        return [
            c?.renewalBillingPlanType, c?.autoRenewStatus.map { $0 ? 1 : 0 }, c?.autoRenewProductID, c?.renewalDate,
            c?.renewalPrice, c?.renewalPlanType,
        ]
    }

    static func renewal(_ s: Statement, from c: Int32) -> Stated<Renewal> {
        Stated(
            Renewal(
                originalTransactionID: s.text(c)!, productID: s.text(c + 1), autoRenewProductID: s.text(c + 2),
                autoRenewStatus: s.optionalInt(c + 3).map { $0 == 1 }, expirationIntent: s.optionalInt(c + 4),
                gracePeriodExpiresDate: s.optionalInt(c + 5), isInBillingRetryPeriod: s.optionalInt(c + 6).map { $0 == 1 },
                priceConsentStatus: s.text(c + 7), priceIncreaseStatus: s.text(c + 8), offerCodeRefName: s.text(c + 9),
                promotionalOfferID: s.text(c + 10), environment: s.text(c + 11)!, storeState: s.text(c + 12),
                autoResumeDate: s.optionalInt(c + 13), commitment: renewalCommitment(s, from: c + 15)),
            rawJSON: s.text(c + 14)!)
    }

    static func renewalCommitment(_ s: Statement, from c: Int32) -> RenewalCommitment? {
        let commitment = RenewalCommitment(
            renewalBillingPlanType: s.text(c), autoRenewStatus: s.optionalInt(c + 1).map { $0 == 1 },
            autoRenewProductID: s.text(c + 2), renewalDate: s.optionalInt(c + 3), renewalPrice: s.optionalInt(c + 4),
            renewalPlanType: s.text(c + 5))
        return commitment == RenewalCommitment() ? nil : commitment
    }

    /// original_transaction_id … auto_resume_date, in the column order of both renewal tables.
    static func renewalValues(_ r: Renewal) -> [(any StatementValue)?] {
        [
            r.originalTransactionID, r.productID, r.autoRenewProductID, r.autoRenewStatus.map { $0 ? 1 : 0 },
            r.expirationIntent, r.gracePeriodExpiresDate, r.isInBillingRetryPeriod.map { $0 ? 1 : 0 }, r.priceConsentStatus,
            r.priceIncreaseStatus, r.offerCodeRefName, r.promotionalOfferID, r.environment, r.storeState, r.autoResumeDate,
        ]
    }

    static let insertHistorySQL = """
        INSERT INTO renewal_history (original_transaction_id, product_id, auto_renew_product_id, auto_renew_status,
            expiration_intent, grace_period_expires_date, is_in_billing_retry_period, price_consent_status,
            price_increase_status, offer_code_ref_name, promotional_offer_id, environment, store_state, auto_resume_date,
            raw_json, observed_at, \(renewalCommitmentColumns.joined(separator: ", ")))
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
        """

    /// The most rows one statement upserts; each row count up to it is a statement prepared once
    /// per connection.
    static let rowsPerStatement = 16

    /// `rows` in order, cut into runs of at most ``rowsPerStatement`` in which no key comes twice
    /// (PostgreSQL refuses an upsert that would touch one row twice; a key again starts the next
    /// run, so the later row is still written after the earlier, as one at a time).
    static func batches<Row, Key: Hashable>(of rows: [Row], by key: (Row) -> Key) -> [ArraySlice<Row>] {
        var batches: [ArraySlice<Row>] = []
        var start = rows.startIndex
        var keys = Set<Key>()
        for index in rows.indices {
            if index - start == rowsPerStatement || !keys.insert(key(rows[index])).inserted {
                batches.append(rows[start..<index])
                (start, keys) = (index, [key(rows[index])])
            }
        }
        if start < rows.endIndex { batches.append(rows[start...]) }
        return batches
    }

    /// The columns of a transaction's upsert.
    static let upsertedTransactionColumns = 26 + commerceColumns.count

    // An unchanged row is not rewritten (the WHERE of the upsert), so re-posting changes nothing.
    static func upsertTransactionSQL(rows: Int) -> String {
        let row = "(" + Array(repeating: "?", count: upsertedTransactionColumns).joined(separator: ", ") + ")"
        return """
            INSERT INTO transactions (transaction_id, original_transaction_id, product_id, bundle_id, environment, purchase_date,
                original_purchase_date, expires_date, cancellation_date, cancellation_reason, quantity, is_trial_period,
                is_in_intro_offer_period, is_upgraded, ownership_type, subscription_group_id, web_order_line_item_id,
                promotional_offer_id, offer_code_ref_name, raw_json, first_seen_at, updated_at, app_account_token, stated_at, store,
                app_transaction_id, \(commerceColumns.joined(separator: ", ")))
            VALUES \(Array(repeating: row, count: rows).joined(separator: ",\n    "))
            \(upsertTransactionConflict)
            """
    }

    /// The statement drops a refund the stored row had: the store reversed it (an upgrade's
    /// cancellation, which is no refund, excepted).
    static let refundReversed = """
        transactions.cancellation_date IS NOT NULL AND excluded.cancellation_date IS NULL AND transactions.is_upgraded = 0
        """

    static let upsertTransactionConflict = """
        ON CONFLICT (transaction_id) DO UPDATE SET original_transaction_id = excluded.original_transaction_id,
            product_id = excluded.product_id, bundle_id = excluded.bundle_id, environment = excluded.environment,
            purchase_date = excluded.purchase_date, original_purchase_date = excluded.original_purchase_date,
            expires_date = excluded.expires_date, cancellation_date = excluded.cancellation_date,
            cancellation_reason = excluded.cancellation_reason, quantity = excluded.quantity,
            is_trial_period = excluded.is_trial_period, is_in_intro_offer_period = excluded.is_in_intro_offer_period,
            is_upgraded = excluded.is_upgraded, ownership_type = excluded.ownership_type,
            subscription_group_id = excluded.subscription_group_id, web_order_line_item_id = excluded.web_order_line_item_id,
            promotional_offer_id = excluded.promotional_offer_id, offer_code_ref_name = excluded.offer_code_ref_name,
            raw_json = excluded.raw_json, updated_at = excluded.updated_at,
            app_account_token = coalesce(excluded.app_account_token, transactions.app_account_token), stated_at = excluded.stated_at,
            store = excluded.store,
            app_transaction_id = coalesce(excluded.app_transaction_id, transactions.app_transaction_id),
            reversed_refund_date = CASE WHEN \(refundReversed) THEN transactions.cancellation_date
                ELSE transactions.reversed_refund_date END,
            refund_reversed_at = CASE WHEN \(refundReversed) THEN excluded.stated_at ELSE transactions.refund_reversed_at END,
            \(keptTerms),
            price = CASE WHEN \(betterPrice) THEN excluded.price ELSE transactions.price END,
            currency = CASE WHEN \(betterPrice) THEN excluded.currency ELSE transactions.currency END,
            price_source = CASE WHEN \(betterPrice) THEN excluded.price_source ELSE transactions.price_source END
        WHERE (transactions.raw_json IS DISTINCT FROM excluded.raw_json OR transactions.environment IS DISTINCT FROM excluded.environment
            OR transactions.bundle_id IS DISTINCT FROM excluded.bundle_id OR \(betterPrice))
            AND excluded.stated_at >= transactions.stated_at
        """

    /// The terms a write sets: a store's signed data states them all (it always names the
    /// storefront), so its row's replace the stored ones; verifyReceipt states none, so a row
    /// from it keeps what Apple's transaction history taught (`receiptd backfill-prices`).
    static let keptTerms = termColumns.map {
        "\($0) = CASE WHEN excluded.storefront IS NULL THEN transactions.\($0) ELSE excluded.\($0) END"
    }.joined(separator: ", ")

    /// Whether the row being written states a price better than the stored one (none, or from a
    /// lower ``PriceSource``): a price is only ever improved, never forgotten.
    static let betterPrice = """
        (excluded.price IS NOT NULL AND (transactions.price IS NULL OR \(priceRank("excluded")) < \(priceRank("transactions"))))
        """

    static func priceRank(_ table: String) -> String {
        "CASE \(table).price_source "
            + PriceSource.allCases.enumerated().map { "WHEN '\($0.element.rawValue)' THEN \($0.offset)" }.joined(separator: " ")
            + " ELSE \(PriceSource.allCases.count) END"
    }

    static let upsertRenewalSQL = """
        INSERT INTO pending_renewal_info (original_transaction_id, product_id, auto_renew_product_id, auto_renew_status,
            expiration_intent, grace_period_expires_date, is_in_billing_retry_period, price_consent_status,
            price_increase_status, offer_code_ref_name, promotional_offer_id, environment, store_state, auto_resume_date,
            raw_json, updated_at, stated_at, \(renewalCommitmentColumns.joined(separator: ", ")))
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
        ON CONFLICT (original_transaction_id) DO UPDATE SET product_id = excluded.product_id,
            auto_renew_product_id = excluded.auto_renew_product_id, auto_renew_status = excluded.auto_renew_status,
            expiration_intent = excluded.expiration_intent, grace_period_expires_date = excluded.grace_period_expires_date,
            is_in_billing_retry_period = excluded.is_in_billing_retry_period,
            price_consent_status = excluded.price_consent_status, price_increase_status = excluded.price_increase_status,
            offer_code_ref_name = excluded.offer_code_ref_name, promotional_offer_id = excluded.promotional_offer_id,
            environment = excluded.environment, store_state = excluded.store_state,
            auto_resume_date = excluded.auto_resume_date, raw_json = excluded.raw_json, updated_at = excluded.updated_at,
            stated_at = excluded.stated_at,
            \(renewalCommitmentColumns.map { "\($0) = excluded.\($0)" }.joined(separator: ", "))
        WHERE (pending_renewal_info.raw_json IS DISTINCT FROM excluded.raw_json
            OR pending_renewal_info.environment IS DISTINCT FROM excluded.environment)
            AND excluded.stated_at >= pending_renewal_info.stated_at
        """
}

extension Statement {
    /// The column as an integer, nil when NULL.
    public func optionalInt(_ column: Int32) -> Int64? { isNull(column) ? nil : int(column) }

    /// The first column of the first row as an integer; nil when there is no row or it is NULL.
    public func firstInt() throws -> Int64? { try step() ? optionalInt(0) : nil }

    /// The first column of the first row as text; nil when there is no row or it is NULL.
    public func firstText() throws -> String? { try step() ? text(0) : nil }
}

/// A purchase that has moved between app users (`GET /v1/admin/shared-receipts`).
public struct SharedReceipt: Sendable, Equatable {
    public var originalTransactionID: String
    /// How many distinct users have held it.
    public var users: Int
    /// Who holds it now.
    public var holder: String?
    /// Every change of holder, oldest first (the first one has no `from`).
    public var transfers: [Transfer]
}

extension ReceiptStore {
    /// Purchases held by more than `moreThan` distinct users, most users first, then by id;
    /// `after` continues from the last row of the previous page.
    public func sharedReceipts(moreThan: Int, limit: Int, after: (users: Int, original: String)? = nil) throws
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
