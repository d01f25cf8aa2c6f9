package import DatabaseEngine

/// Makes two app user ids one subscriber: `alias` becomes another name of `canonical`.
/// Synchronous, SQL only: run ``merge(_:into:at:)`` inside one `DatabaseQueue.write`, after the
/// caller decided the merge is allowed (ReceiptCore's `AddAlias` applies the ownership policy).
///
/// What moves to the canonical id, and what stays:
/// - the purchases `alias` holds: their holder becomes `canonical`, each move recorded in
///   `ownership_transfers` (the derivation reads a move between one person's ids as no transfer);
/// - `alias`'s events, verification log and shadow diffs: re-keyed to `canonical`, one history.
///   An event `canonical` already has under the same key (a purchase that passed between the two)
///   is kept once;
/// - `alias`'s own aliases: they name `canonical` now, with the time they were made;
/// - `alias`'s subscriber row: deleted (an alias has none); its webhook messages, notifications
///   and change log rows keep the name they were recorded with (history, found by the export and
///   erased with the person, who is known by all their ids).
package struct Merge {
    private let db: Database

    package init(_ database: Database) { db = database }

    /// What a merge changed.
    package struct Outcome: Sendable, Equatable {
        /// The original transactions that moved from the alias to the canonical id.
        package var moved: [String]
        /// Whether the alias was a subscriber with stored rows (else it was only a name).
        package var aliasWasKnown: Bool
    }

    /// Merges `alias` (a subscriber's canonical id, or an id never stored) into `canonical`
    /// (created when new), at `now`, in the caller's transaction. The caller has locked both ids
    /// and the purchases `alias` holds (``ReceiptStore/lock(purchases:subscriber:)``).
    package func merge(_ alias: String, into canonical: String, at now: Int64) throws -> Outcome {
        try db.transaction { () throws -> Outcome in
            let store = ReceiptStore(db)
            try store.addSubscriber(canonical, now: now)
            let aliasWasKnown = try store.isSubscriber(alias)
            var moved: [String] = []
            if aliasWasKnown {
                moved = try held(by: alias)
                for original in moved {
                    try db.cached("UPDATE ownership SET app_user_id = ?, since = ? WHERE original_transaction_id = ?")
                        .bind([canonical, now, original]).run()
                    try db.cached(
                        "INSERT INTO ownership_transfers (original_transaction_id, from_app_user_id, to_app_user_id, at) VALUES (?, ?, ?, ?)"
                    ).bind([original, alias, canonical, now]).run()
                }
                // One history: the alias's events join the canonical id's, each key once.
                try db.cached(
                    """
                    UPDATE events SET app_user_id = ?1 WHERE app_user_id = ?2
                    AND event_key NOT IN (SELECT event_key FROM events WHERE app_user_id = ?1)
                    """
                ).bind([canonical, alias]).run()
                try db.cached("DELETE FROM events WHERE app_user_id = ?").bind([alias]).run()
                for table in ["verifications", "shadow_diffs", "aliases", "promotions"] {
                    try db.cached("UPDATE \(table) SET app_user_id = ? WHERE app_user_id = ?").bind([canonical, alias]).run()
                }
                try db.cached("DELETE FROM product_states WHERE app_user_id = ?").bind([alias]).run()
                // One person, first seen when the first of their ids was.
                try db.cached(
                    """
                    UPDATE subscribers SET first_seen_at = (SELECT min(coalesce(s.first_seen_at, s.created_at)) FROM subscribers s
                        WHERE s.app_user_id = ?1 OR s.app_user_id = ?2)
                    WHERE app_user_id = ?1
                    """
                ).bind([canonical, alias]).run()
                try db.cached("DELETE FROM subscribers WHERE app_user_id = ?").bind([alias]).run()
                try ChangeLog(db).append(alias, at: now)  // its cached document is gone
            }
            // Its attributes (a name only, too, may have some) join the subscriber's; a name the
            // subscriber has keeps the subscriber's value.
            try db.cached(
                """
                UPDATE attributes SET app_user_id = ?1 WHERE app_user_id = ?2
                AND name NOT IN (SELECT name FROM attributes WHERE app_user_id = ?1)
                """
            ).bind([canonical, alias]).run()
            try db.cached("DELETE FROM attributes WHERE app_user_id = ?").bind([alias]).run()
            try db.cached("INSERT INTO aliases (alias, app_user_id, at) VALUES (?, ?, ?)").bind([alias, canonical, now]).run()
            try store.factsChanged([canonical], at: now)
            return Outcome(moved: moved, aliasWasKnown: aliasWasKnown)
        }
    }

    /// The original transactions `appUserID` holds, in byte order.
    package func held(by appUserID: String) throws -> [String] {
        let q = try db.cached("SELECT original_transaction_id FROM ownership WHERE app_user_id = ?").bind([appUserID])
        var originals: [String] = []
        while try q.step() { originals.append(q.text(0)!) }
        return originals.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
    }
}
