import JSON

/// Erases a person (issue 22, GDPR art. 17): every row keyed by their app user ids, the purchases
/// they hold with everything stored about them, and their name wherever another user's rows
/// carry it. Synchronous: run ``erase(_:by:at:)`` inside one `DatabaseQueue.write`.
///
/// What goes, and what stays:
/// - the subscriber rows, events, verification log, shadow diffs, change log rows and webhook
///   messages and deliveries of the ids: deleted;
/// - the purchases the ids hold (``ReceiptStore``'s ownership): their transactions, pending
///   renewal info, renewal history, latest receipt, refresh checks, ownership and transfers:
///   deleted. Apple reporting on one of them later finds no holder (`pending_owner`, as for an
///   unknown purchase): the erased id is never brought back;
/// - notifications that named the ids or those purchases: kept as tombstones (outcome `erased`,
///   body, ids and purchase emptied), so a delivery of one again is still known as a duplicate
///   and the notification counts stay true;
/// - transfers of purchases now held by others, from or to an erased id: the id is replaced by
///   ``erasedID`` there and in those users' events about the transfer, so their history keeps its
///   shape (and `rederive` finds nothing to change) without naming the person;
/// - one `erasures` row: when, by which key, how many rows, never whose.
///
/// On SQLite the connection overwrites what it deletes (`secure_delete`) during the erasure; see
/// ``Database/scrubAfterErasure()`` for the file and its WAL.
public struct Erasure {
    /// What an erased id reads as in another user's transfer history.
    public static let erasedID = "(erased)"

    /// How many rows each table lost (deleted) or had blanked (tombstoned, renamed).
    public struct Outcome: Sendable, Equatable {
        /// Per table, rows deleted or changed; tables untouched are absent.
        public var rows: [String: Int] = [:]
        public var total: Int { rows.values.reduce(0, +) }
        /// Whether any of the ids was stored at all.
        public var found: Bool
        /// Other users whose transfer history named an erased id (now ``Erasure/erasedID``): their
        /// events changed, so their cached views must go.
        public var othersChanged: [String] = []
    }

    private let db: Database

    public init(_ database: Database) { db = database }

    /// Erases the person `appUserID` names (their canonical id and every alias, whichever of them
    /// is given) in the caller's transaction and records it, `by` naming the asker (see
    /// Migrations/0011_erasures.sql).
    public func erase(_ appUserID: String, by asker: String, at now: Int64) throws -> Outcome {
        let store = ReceiptStore(db)
        let canonical = try store.canonical(appUserID)
        let ids = Array(Set([canonical] + (try store.aliases(of: canonical).map(\.appUserID)))).sorted()
        let originals = try held(by: ids)
        let elsewhere = try transferredElsewhere(ids, except: originals)
        try ReceiptStore(db).lock(purchases: originals, subscriber: nil)
        try db.lock(ids.map { "subscriber:" + $0 })
        var outcome = Outcome(found: try count("SELECT count(*) FROM subscribers WHERE app_user_id IN", ids) > 0)
        let secure = db.dialect == .sqlite
        if secure { try db.execute("PRAGMA secure_delete = ON") }
        defer { if secure { try? db.execute("PRAGMA secure_delete = OFF") } }

        func note(_ table: String, _ changed: Int) { if changed > 0 { outcome.rows[table, default: 0] += changed } }
        func run(_ table: String, _ sql: String, _ values: [String]) throws {
            guard !values.isEmpty else { return }
            try db.cached(sql + " (" + Array(repeating: "?", count: values.count).joined(separator: ", ") + ")")
                .bind(values).run()
            note(table, db.changes)
        }

        // Notifications about the ids or their purchases: tombstones.
        let tombstone = """
            UPDATE notifications SET outcome = 'erased', body = '', app_user_id = NULL, original_transaction_id = NULL,
                transaction_id = NULL
            """
        try run("notifications", tombstone + " WHERE app_user_id IN", ids)
        try run("notifications", tombstone + " WHERE original_transaction_id IN", originals)

        // The purchases the ids hold, with everything stored about them.
        for table in [
            "transactions", "pending_renewal_info", "renewal_history", "latest_receipts", "refresh_checks",
            "ownership_transfers", "ownership",
        ] {
            try run(table, "DELETE FROM \(table) WHERE original_transaction_id IN", originals)
        }
        // The rows keyed by the ids (deliveries before their messages, the subscriber last).
        for table in [
            "events", "verifications", "shadow_diffs", "changes", "webhook_deliveries", "webhook_messages", "aliases",
            "promotions", "product_states", "subscribers",
        ] {
            try run(table, "DELETE FROM \(table) WHERE app_user_id IN", ids)
        }

        // Others' history of purchases that passed through an erased id keeps its shape, unnamed:
        // the transfers, the events about them, and the webhook payloads that carried those.
        let others = try parties(of: elsewhere, except: ids)
        for column in ["from_app_user_id", "to_app_user_id"] {
            try run(
                "ownership_transfers",
                "UPDATE ownership_transfers SET \(column) = '\(Self.erasedID)' WHERE \(column) IN", ids)
        }
        note("events", try rename(ids, in: "events", column: "facts_json", where: "original_transaction_id", elsewhere))
        note("webhook_messages", try rename(ids, in: "webhook_messages", column: "body", where: "app_user_id", others))
        outcome.othersChanged = others
        // Caches forget: every entry (the change may not name whom), and the others' views of their history.
        try ReceiptStore(db).factsChanged(others, at: now)
        try ChangeLog(db).append(ChangeLog.everyone, at: now)
        try db.cached("INSERT INTO erasures (at, by_key, rows) VALUES (?, ?, ?)")
            .bind([now, asker, Int64(outcome.total)]).run()
        return outcome
    }

    /// The purchases the ids hold.
    private func held(by ids: [String]) throws -> [String] {
        try strings("SELECT original_transaction_id FROM ownership WHERE app_user_id IN", ids)
    }

    /// Purchases not among `originals` whose transfers name one of the ids.
    private func transferredElsewhere(_ ids: [String], except originals: [String]) throws -> [String] {
        let named =
            try strings(
                "SELECT DISTINCT original_transaction_id FROM ownership_transfers WHERE from_app_user_id IN", ids)
            + strings("SELECT DISTINCT original_transaction_id FROM ownership_transfers WHERE to_app_user_id IN", ids)
        return Array(Set(named).subtracting(originals)).sorted()
    }

    /// The other users on either side of `originals`' transfers.
    private func parties(of originals: [String], except ids: [String]) throws -> [String] {
        let sides =
            try strings("SELECT from_app_user_id FROM ownership_transfers WHERE original_transaction_id IN", originals)
            + strings("SELECT to_app_user_id FROM ownership_transfers WHERE original_transaction_id IN", originals)
        return Array(Set(sides).subtracting(ids + [Self.erasedID, ""])).sorted()
    }

    /// In `table`'s rows whose `key` is one of `keys`, every id as a JSON string in `column`
    /// becomes ``erasedID``; returns how many rows changed.
    private func rename(_ ids: [String], in table: String, column: String, where key: String, _ keys: [String]) throws
        -> Int
    {
        // Row ids read and bound as text: events' are integers, webhook messages' text.
        let rows = try pairs("SELECT id, \(column) FROM \(table) WHERE \(key) IN", keys)
        let update = try db.cached("UPDATE \(table) SET \(column) = ? WHERE id = ?")
        var changed = 0
        for (id, text) in rows {
            var renamed = text
            for erased in ids { renamed = renamed.replacing(Self.jsonString(erased), with: Self.jsonString(Self.erasedID)) }
            guard renamed != text else { continue }
            try update.bind([renamed, id]).run()
            changed += 1
        }
        return changed
    }

    private func pairs(_ sql: String, _ values: [String]) throws -> [(String, String)] {
        guard !values.isEmpty else { return [] }
        let q = try db.cached(sql + " (" + Array(repeating: "?", count: values.count).joined(separator: ", ") + ")")
            .bind(values)
        var out: [(String, String)] = []
        while try q.step() { out.append((q.text(0) ?? "", q.text(1) ?? "")) }
        return out
    }

    /// `text` as a JSON string literal, as the facts' writer (``JSONValue``) writes it.
    static func jsonString(_ text: String) -> String { String(decoding: JSONValue.string(text).jsonBytes, as: UTF8.self) }

    private func strings(_ sql: String, _ values: [String]) throws -> [String] {
        guard !values.isEmpty else { return [] }
        let q = try db.cached(sql + " (" + Array(repeating: "?", count: values.count).joined(separator: ", ") + ")")
            .bind(values)
        var out: [String] = []
        while try q.step() { out.append(q.text(0) ?? "") }
        return out
    }

    private func count(_ sql: String, _ values: [String]) throws -> Int64 {
        let q = try db.cached(sql + " (" + Array(repeating: "?", count: values.count).joined(separator: ", ") + ")")
            .bind(values)
        defer { q.reset() }
        return try q.step() ? q.int(0) : 0
    }
}
