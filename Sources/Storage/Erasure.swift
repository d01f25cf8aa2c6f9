package import DatabaseEngine
import Entitlements
import JSON

/// Erases a person (GDPR art. 17): every row keyed by their app user ids, the purchases they
/// hold with everything stored about them, and their name wherever another user's rows carry it.
/// Synchronous: run ``erase(_:by:at:)`` inside one `DatabaseQueue.write`.
///
/// What goes, and what stays:
/// - the subscriber rows, events, verification log, shadow diffs, change log rows, aliases,
///   promotions, product states, attributes and webhook messages and deliveries of the ids: deleted;
/// - the purchases the ids hold (``ReceiptStore``'s ownership): their transactions, pending
///   renewal info, renewal history, latest receipt, refresh checks, refund requests and
///   ownership: deleted. Apple reporting on one of them later finds no holder (`pending_owner`,
///   as for an unknown purchase): the erased id is never brought back;
/// - notifications that named the ids or those purchases: kept as tombstones (outcome `erased`,
///   body, ids and purchase emptied), so a delivery of one again is still known as a duplicate
///   and the notification counts stay true;
/// - moves of any purchase (held by the person or by others) from or to an erased id: those the
///   person alone was party to go; those another user was party to stay, the id replaced by
///   ``erasedID`` there, in those users' events about them (facts and keys) and in their webhook
///   payloads, so their history keeps its shape (and `rederive` finds nothing to change) without
///   naming the person. A kept move of an erased purchase keeps its product (its transactions
///   are gone), so the other user's history still says what went;
/// - one `erasures` row: when, by which key, how many rows, never whose.
///
/// Docs/security.md lists every place an id is copied into another person's rows. On SQLite
/// every connection overwrites what it deletes (`secure_delete`, set by ``Database``); see
/// ``Database/scrubAfterErasure()`` for the file and its WAL.
package struct Erasure {
    /// What an erased id reads as in another user's transfer history.
    package static let erasedID = "(erased)"

    /// How many rows each table lost (deleted) or had blanked (tombstoned, renamed).
    package struct Outcome: Sendable, Equatable {
        /// Per table, rows deleted or changed; tables untouched are absent.
        package var rows: [String: Int] = [:]
        package var total: Int { rows.values.reduce(0, +) }
        /// Whether any of the ids was stored at all.
        package var found: Bool
        /// The ids erased: the person's canonical id and aliases.
        package var ids: [String] = []
        /// Other users whose history named an erased id (now ``Erasure/erasedID``): their events
        /// changed, so their cached views must go.
        package var othersChanged: [String] = []
    }

    private let db: Database

    package init(_ database: Database) { db = database }

    /// Erases the person `appUserID` names (their canonical id and every alias, whichever of them
    /// is given) in the caller's transaction and records it, `by` naming the asker (see
    /// Migrations/0011_erasures.sql). The chart rollups' rows of the ids are not here (on SQLite
    /// they are another file's): ``RollupStore/forget(_:marksOf:)`` takes them after, `ids` of
    /// the outcome.
    package func erase(_ appUserID: String, by asker: String, at now: Int64) throws -> Outcome {
        let store = ReceiptStore(db)
        let canonical = try store.canonical(appUserID)
        let ids = Array(Set([canonical] + (try store.aliases(of: canonical).map(\.appUserID)))).sorted()
        let originals = try held(by: ids)
        // Every purchase whose moves name the person, theirs or gone on to others, and everyone
        // else on either side of those moves: their history names the person.
        let moved =
            try strings("SELECT DISTINCT original_transaction_id FROM ownership_transfers WHERE from_app_user_id IN", ids)
            + strings("SELECT DISTINCT original_transaction_id FROM ownership_transfers WHERE to_app_user_id IN", ids)
        let touched = Array(Set(originals + moved)).sorted()
        let others = try parties(of: touched, except: ids)
        try store.lock(purchases: touched, subscriber: nil)
        try db.lock(ids.map { "subscriber:" + $0 })
        var outcome = Outcome(found: try count("SELECT count(*) FROM subscribers WHERE app_user_id IN", ids) > 0, ids: ids)

        func note(_ table: String, _ changed: Int) { if changed > 0 { outcome.rows[table, default: 0] += changed } }
        func run(_ table: String, _ sql: String, _ values: [String]) throws {
            guard !values.isEmpty else { return }
            try db.cached(sql + " " + Self.list(values.count)).bind(values).run()
            note(table, db.changes)
        }

        // Notifications about the ids or their purchases: tombstones.
        let tombstone = """
            UPDATE notifications SET outcome = 'erased', body = '', app_user_id = NULL, original_transaction_id = NULL,
                transaction_id = NULL
            """
        try run("notifications", tombstone + " WHERE app_user_id IN", ids)
        try run("notifications", tombstone + " WHERE original_transaction_id IN", originals)

        // Moves of their purchases that only they were party to go; those another user was party to
        // stay in that user's history, with the product they were of (its transactions go next).
        if !originals.isEmpty {
            let (o, i) = (Self.list(originals.count), Self.list(ids.count))
            try db.cached(
                """
                DELETE FROM ownership_transfers WHERE original_transaction_id IN \(o)
                    AND (from_app_user_id IS NULL OR from_app_user_id IN \(i)) AND to_app_user_id IN \(i)
                """
            ).bind(originals + ids + ids).run()
            note("ownership_transfers", db.changes)
        }
        let keepProduct = try db.cached(
            "UPDATE ownership_transfers SET product_id = COALESCE(product_id, ?) WHERE original_transaction_id = ?")
        for original in originals {
            guard let product = try store.newestProduct(of: original) else { continue }
            try keepProduct.bind([product, original]).run()
        }
        // The purchases the ids hold, with everything else stored about them (the calls owed to
        // Apple about them first: their tokens', and their transactions' found through those).
        if !originals.isEmpty {
            let list = Self.list(originals.count)
            try db.cached(
                "DELETE FROM app_store_calls WHERE subject IN \(list) "
                    + "OR subject IN (SELECT transaction_id FROM transactions WHERE original_transaction_id IN \(list))"
            ).bind(originals + originals).run()
            note("app_store_calls", db.changes)
        }
        for table in [
            "transactions", "pending_renewal_info", "renewal_history", "latest_receipts", "refresh_checks", "refund_requests",
            "ownership",
        ] {
            try run(table, "DELETE FROM \(table) WHERE original_transaction_id IN", originals)
        }
        // Apple's retention requests about those purchases (by anyone's id, or before any owner).
        try run("retention_answers", "DELETE FROM retention_answers WHERE original_transaction_id IN", originals)
        // Google Play's purchase tokens of those purchases (a token reads the purchase at Google),
        // and those the person posted whose payment never completed (nobody holds them).
        try run("play_tokens", "DELETE FROM play_tokens WHERE chain IN", originals)
        if !ids.isEmpty {
            let list = Self.list(ids.count)
            try db.cached(
                "DELETE FROM play_tokens WHERE posted_by IN \(list) "
                    + "AND NOT EXISTS (SELECT 1 FROM ownership o WHERE o.original_transaction_id = play_tokens.chain)"
            ).bind(ids).run()
            note("play_tokens", db.changes)
        }
        try run("play_tokens", "UPDATE play_tokens SET posted_by = NULL WHERE posted_by IN", ids)
        // The rows keyed by the ids (deliveries before their messages, the subscriber last).
        for table in [
            "events", "verifications", "shadow_diffs", "changes", "webhook_deliveries", "webhook_messages", "aliases",
            "promotions", "product_states", "play_notifications", "offer_signatures", "app_transactions", "retention_answers",
            "attributes", "subscribers",
        ] {
            try run(table, "DELETE FROM \(table) WHERE app_user_id IN", ids)
        }

        // Others' history of purchases that passed through an erased id keeps its shape, unnamed:
        // the moves, the events about them, and the webhook payloads that carried those.
        for column in ["from_app_user_id", "to_app_user_id"] {
            try run(
                "ownership_transfers",
                "UPDATE ownership_transfers SET \(column) = '\(Self.erasedID)' WHERE \(column) IN", ids)
        }
        note("events", try renameInEvents(ids, of: others, about: touched))
        note("webhook_messages", try renameInMessages(ids, of: others))
        outcome.othersChanged = others
        // Caches forget: every entry (the change may not name whom), and the others' views of their
        // history. The chart rollups' sums (no one's rows, only totals) are rebuilt on hearing it.
        try store.factsChanged(others, at: now)
        try ChangeLog(db).append(ChangeLog.everyone, at: now)
        // Someone known only by rows of their id (an offer signature, a refused verification, a
        // retention answer, a queue row) is found too: erased all the same.
        outcome.found = outcome.found || outcome.total > 0
        // A write that began before now (a call to a store in flight) must not bring them back,
        // nor, when nothing of them was found, store them for the first time: their first POST
        // may be waiting on Apple while they ask to be erased.
        try ErasedIDs(db).record(ids, at: now)
        guard outcome.found else { return outcome }
        try db.cached("INSERT INTO erasures (at, by_key, rows) VALUES (?, ?, ?)")
            .bind([now, asker, Int64(outcome.total)]).run()
        return outcome
    }

    /// The purchases the ids hold.
    private func held(by ids: [String]) throws -> [String] {
        try strings("SELECT original_transaction_id FROM ownership WHERE app_user_id IN", ids)
    }

    /// The other users on either side of `originals`' moves.
    private func parties(of originals: [String], except ids: [String]) throws -> [String] {
        let sides =
            try strings("SELECT from_app_user_id FROM ownership_transfers WHERE original_transaction_id IN", originals)
            + strings("SELECT to_app_user_id FROM ownership_transfers WHERE original_transaction_id IN", originals)
        return Array(Set(sides).subtracting(ids + [Self.erasedID, ""])).sorted()
    }

    /// In the events of `others` about `originals`, each erased id in the facts and in a
    /// transfer's key becomes ``erasedID``, as deriving them again names it. Returns how many rows
    /// changed. Two moves to two of one person's ids at one instant would now share a key: the
    /// derivation sees one event there, so the second row goes.
    private func renameInEvents(_ ids: [String], of others: [String], about originals: [String]) throws -> Int {
        guard !others.isEmpty, !originals.isEmpty else { return 0 }
        let q = try db.cached(
            """
            SELECT id, app_user_id, event_key, at, original_transaction_id, facts_json FROM events
            WHERE app_user_id IN \(Self.list(others.count)) AND original_transaction_id IN \(Self.list(originals.count))
            """
        ).bind(others + originals)
        var rows: [(id: Int64, user: String, key: String, at: Int64, original: String, facts: String)] = []
        while try q.step() { rows.append((q.int(0), q.text(1)!, q.text(2)!, q.int(3), q.text(4)!, q.text(5)!)) }
        let taken = try db.cached("SELECT count(*) FROM events WHERE app_user_id = ? AND event_key = ? AND id <> ?")
        let update = try db.cached("UPDATE events SET event_key = ?, facts_json = ? WHERE id = ?")
        let delete = try db.cached("DELETE FROM events WHERE id = ?")
        var changed = 0
        for row in rows {
            var key = row.key
            for erased in ids
            where key == LifecycleEvent.transferKey(originalTransactionID: row.original, at: row.at, to: erased) {
                key = LifecycleEvent.transferKey(originalTransactionID: row.original, at: row.at, to: Self.erasedID)
            }
            let facts = Self.renamed(row.facts, ids)
            guard key != row.key || facts != row.facts else { continue }
            _ = try taken.bind([row.user, key, row.id]).step()
            let clash = taken.int(0) > 0
            taken.reset()
            if clash { try delete.bind([row.id]).run() } else { try update.bind([key, facts, row.id]).run() }
            changed += 1
        }
        return changed
    }

    /// In every webhook payload of `others`, each erased id becomes ``erasedID``; returns how
    /// many changed.
    private func renameInMessages(_ ids: [String], of others: [String]) throws -> Int {
        let rows = try pairs("SELECT id, body FROM webhook_messages WHERE app_user_id IN", others)
        let update = try db.cached("UPDATE webhook_messages SET body = ? WHERE id = ?")
        var changed = 0
        for (id, body) in rows {
            let renamed = Self.renamed(body, ids)
            guard renamed != body else { continue }
            try update.bind([renamed, id]).run()
            changed += 1
        }
        return changed
    }

    /// `text` with every id of `ids` as a JSON string replaced by ``erasedID`` as one.
    private static func renamed(_ text: String, _ ids: [String]) -> String {
        var out = text
        for erased in ids { out = out.replacing(jsonString(erased), with: jsonString(erasedID)) }
        return out
    }

    /// `(?, ?, …)`: `n` placeholders.
    static func list(_ n: Int) -> String { "(" + Array(repeating: "?", count: n).joined(separator: ", ") + ")" }

    private func pairs(_ sql: String, _ values: [String]) throws -> [(String, String)] {
        guard !values.isEmpty else { return [] }
        let q = try db.cached(sql + " " + Self.list(values.count)).bind(values)
        var out: [(String, String)] = []
        while try q.step() { out.append((q.text(0) ?? "", q.text(1) ?? "")) }
        return out
    }

    /// `text` as a JSON string literal, as the facts' writer (``JSONValue``) writes it.
    static func jsonString(_ text: String) -> String { String(decoding: JSONValue.string(text).jsonBytes, as: UTF8.self) }

    private func strings(_ sql: String, _ values: [String]) throws -> [String] {
        guard !values.isEmpty else { return [] }
        let q = try db.cached(sql + " " + Self.list(values.count)).bind(values)
        var out: [String] = []
        while try q.step() { out.append(q.text(0) ?? "") }
        return out
    }

    private func count(_ sql: String, _ values: [String]) throws -> Int64 {
        let q = try db.cached(sql + " " + Self.list(values.count)).bind(values)
        defer { q.reset() }
        return try q.step() ? q.int(0) : 0
    }
}
