package import DatabaseEngine
package import Entitlements
import Identifiers

// A subscriber read whole: their purchases' transactions and renewals, transfers and aliases.
extension ReceiptStore {
    /// The subscriber, every transaction and renewal snapshot of the purchases they hold, and the
    /// transfers that concern them; nil when unknown.
    /// An alias reads as the subscriber it names (``SubscriberRecord/appUserID`` is then the canonical id).
    ///
    /// `ahead`: reads the caller makes next, sent with the subscriber's own (on PostgreSQL, in their
    /// round trip); the caller steps through them and resets them.
    package func subscriber(_ requestedID: String, ahead: [Statement] = []) throws -> SubscriberRecord? {
        let head = try db.cached(
            """
            SELECT version, state_hash, facts_revision, derived_revision, summary_until, document_settings FROM subscribers
            WHERE app_user_id = ?
            """
        ).bind([requestedID])
        // No ORDER BY, no IN (SELECT …): each would open a temporary B-tree per statement, which was
        // a third of an uncached read. The rows are few; they are ordered here, as SQLite would.
        let transactions = try db.cached(Self.heldTransactionsSQL)
        let history = try db.cached(Self.heldHistorySQL)
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
        try db.prefetch(try prefetched.map { try $0.bind([requestedID]) } + ahead)
        // An alias has no subscriber row: its rows are read again for the id it names.
        var appUserID = requestedID
        if try !head.step() {
            appUserID = try canonical(requestedID)
            guard !appUserID.isExactly(requestedID), try head.bind([appUserID]).step() else { return nil }
        }
        let (version, stateHash, factsRevision, derivedRevision) = (head.int(0), head.text(1), head.int(2), head.int(3))
        let (summaryUntil, documentSettings) = (head.int(4), head.text(5))
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
            summaryUntil: summaryUntil, documentSettings: documentSettings)
    }

    /// The transactions and the renewal history of the purchases someone holds, written once
    /// (their columns' text, built per read, was most of a read's allocations before its rows).
    static let heldTransactionsSQL = """
        SELECT \(transactionColumns("t"))
        FROM ownership o JOIN transactions t ON t.original_transaction_id = o.original_transaction_id
        WHERE o.app_user_id = ?
        """
    static let heldHistorySQL = """
        SELECT h.id, h.observed_at, \(renewalColumns("h"))
        FROM ownership o JOIN renewal_history h ON h.original_transaction_id = o.original_transaction_id
        WHERE o.app_user_id = ?
        """

    /// The subscriber `appUserID` names: the one it is an alias of, else itself (known or not).
    package func canonical(_ appUserID: String) throws -> String {
        let q = try canonicalRead(appUserID)
        defer { q.reset() }
        return try q.step() ? q.text(0)! : appUserID
    }

    /// ``canonical(_:)``'s read, bound: a caller may send it ahead with others
    /// (``Database/prefetch(_:)``).
    package func canonicalRead(_ appUserID: String) throws -> Statement {
        try db.cached("SELECT app_user_id FROM aliases WHERE alias = ?").bind([appUserID])
    }

    /// A subscriber's aliases (``aliases(of:)``, prefetched by ``subscriber(_:)``).
    static let aliasesSQL = "SELECT alias, at FROM aliases WHERE app_user_id = ?"

    /// `appUserID`'s aliases, oldest first (then by bytes).
    package func aliases(of appUserID: String) throws -> [Alias] {
        let q = try db.cached(Self.aliasesSQL).bind([appUserID])
        var aliases: [Alias] = []
        while try q.step() { aliases.append(Alias(appUserID: q.text(0)!, at: q.int(1))) }
        return aliases.sorted { $0.at != $1.at ? $0.at < $1.at : $0.appUserID.utf8.lexicographicallyPrecedes($1.appUserID.utf8) }
    }

    /// The product of the newest transaction of a purchase (by purchase date, then id).
    /// The product of the newest transaction of the purchase `originalTransactionID`.
    package func newestProduct(of originalTransactionID: String) throws -> String? {
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
    /// and joins the ``ChangeLog``) and that the derivation has caught up with those facts; with
    /// `document`, that document kept rendered in the same statement (``DocumentStore``), when
    /// the version it shows is the one written (without, none is kept). A compare-and-set: when the facts or the version
    /// moved since the snapshot, nothing is written and the answer is nil (read again, derive
    /// again). Else the version after the call.
    ///
    /// `ahead`: reads the caller makes next, sent with the settle's own statement (on PostgreSQL,
    /// in its round trip, run after it); dropped unread when nothing is written.
    package func settle(
        _ appUserID: String, hash: String, derivedFrom revision: Int64, version: Int64, now: Int64,
        document: DocumentStore.Rendering? = nil, summaryUntil: Int64? = nil, ahead: [Statement] = []
    ) throws -> Int64? {
        // Without a document, none is kept: the column is cleared with the settle. The summary's
        // validity (``ProductStateStore``) is written with it when given: one write of the row.
        let update = try db.cached(Self.settleSQL).bind([
            hash, revision, now, appUserID, version, document.map { String(decoding: $0.json, as: UTF8.self) },
            document.map { Int64($0.cut) }, document?.settings, summaryUntil,
        ])
        if !ahead.isEmpty { try db.prefetch([update] + ahead) }
        guard try update.step() else {
            for statement in ahead { statement.reset() }
            return nil
        }
        let after = update.int(0)
        update.reset()
        if after != version { try ChangeLog(db).append(appUserID, at: now) }
        // Rendered for another version than the row now shows: none is kept rather than a wrong one.
        if let document, document.version != after { try DocumentStore(db).forget(appUserID) }
        return after
    }

    /// ``settle(_:hash:derivedFrom:version:now:document:summaryUntil:ahead:)`` unanswered: the
    /// snapshot's fingerprint `stateHash` tells the version after it beforehand, so on PostgreSQL
    /// the statement is held back, to go with the next statement awaited or the commit, and a
    /// round trip is saved. Should the facts or the version have moved since the snapshot, the
    /// statement fails the transaction with SQLSTATE ``StorageError/lostCompareAndSet`` (on
    /// PostgreSQL the server raises it: Migrations/postgresql/0044_settle_unanswered.sql), and
    /// nothing of the transaction stays: the caller reads again.
    package func settleUnanswered(
        _ appUserID: String, hash: String, stateHash: String?, derivedFrom revision: Int64, version: Int64, now: Int64,
        document: DocumentStore.Rendering, summaryUntil: Int64
    ) throws -> Int64 {
        let values: [(any StatementValue)?] = [
            hash, revision, now, appUserID, version, String(decoding: document.json, as: UTF8.self), Int64(document.cut),
            document.settings, summaryUntil,
        ]
        if db.dialect == .postgresql {
            try db.cached(Self.settleUnansweredSQL).bind(values).runLater()
        } else {
            try db.cached(Self.settleSQL).bind(values).run()
            guard db.changes == 1 else {
                throw StorageError(
                    .sqlite, "a settle found its row changed by another transaction", sqlState: StorageError.lostCompareAndSet)
            }
        }
        let after = version + (stateHash == hash ? 0 : 1)
        if after != version { try ChangeLog(db).append(appUserID, at: now) }
        if document.version != after { try DocumentStore(db).forget(appUserID) }
        return after
    }

    /// The settle's compare-and-set.
    static let settleSQL = """
        UPDATE subscribers SET version = version + CASE WHEN state_hash IS DISTINCT FROM ?1 THEN 1 ELSE 0 END, state_hash = ?1, derived_revision = ?2,
            updated_at = ?3, document = ?6, document_cut = ?7, document_at = ?3, document_settings = ?8,
            summary_until = COALESCE(?9, summary_until)
        WHERE app_user_id = ?4 AND facts_revision = ?2 AND version = ?5
        RETURNING version
        """

    /// ``settleSQL`` failing its transaction when it changes no row (Migrations/postgresql/0044).
    static let settleUnansweredSQL = "WITH settled AS (\(settleSQL)) SELECT receiptd_settled((SELECT count(*) FROM settled))"

    /// Subscriber ids in order, `limit` at a time after `after`.
    package func subscriberIDs(after: String?, limit: Int) throws -> [String] {
        let q = try db.cached("SELECT app_user_id FROM subscribers WHERE app_user_id > ? ORDER BY app_user_id LIMIT ?")
            .bind([after ?? "", Int64(limit)])
        var ids: [String] = []
        while try q.step() { ids.append(q.text(0)!) }
        return ids
    }
}

extension StorageError {
    /// An unanswered settle (``ReceiptStore/settleUnanswered(_:hash:stateHash:derivedFrom:version:now:document:summaryUntil:)``)
    /// lost: its compare-and-set found the row moved, or another settle stored an event the
    /// snapshot's read of them did not have (a key stored twice). Its transaction left nothing.
    package var lostToAnotherSettle: Bool {
        sqlState == Self.lostCompareAndSet || sqlState == "23505" || sqliteCode == 2067  // SQLITE_CONSTRAINT_UNIQUE
    }
}
