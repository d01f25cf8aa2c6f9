import DatabaseEngine
package import Entitlements

// A save of verified facts on PostgreSQL in one round trip, with its commit: what the save read
// before it wrote is done by the server (Migrations/postgresql/0045_whole_saves.sql).
extension ReceiptStore {
    /// A save sent whole (``saveWhole(_:for:begun:now:)``): what it changed is known once the
    /// round trip it went in has answered (its commit, or its savepoint's release in a group
    /// commit), on the database's thread before the write returns. Read it after the write.
    package final class SentSave: @unchecked Sendable {
        /// Rows new or changed (purchases that changed holder included) and whose facts changed
        /// (the subscriber first, then who lost a purchase to them; empty when nothing changed),
        /// as ``Saved`` has them; nil until answered.
        package fileprivate(set) var outcome: (changes: Int, changed: [String])?

        package init() {}
    }

    /// On PostgreSQL, in the caller's transaction, unanswered: the save a receipt's POST makes
    /// under the `transfer` policy, whole. The locks; the subscriber `requestedID` names (an
    /// alias's); SQLSTATE `RD002` when one of them was erased at or after `begun` (nothing is then
    /// written: ``ErasedIDs/ErasedMeanwhile``); every purchase taken from whoever holds it (each
    /// change of holder recorded, the notifications that waited for a holder attached);
    /// ``save(_:for:holders:now:)``'s facts; and, when anything changed, the subscriber and who
    /// lost a purchase to them marked changed (``factsChanged(_:at:)``). The same rows as those
    /// calls, in one round trip where they took three.
    package func saveWhole(_ facts: VerifiedFacts, for requestedID: String, begun: Int64?, now: Int64) throws -> SentSave {
        precondition(db.dialect == .postgresql, "a whole save is PostgreSQL's")
        let sent = SentSave()
        try db.cached("SELECT receiptd_save_begin(?, ?::text[], ?, ?)").bind([
            requestedID, PostgresSQL.arrayLiteral(facts.originals), begun, now,
        ]).runLater()
        let upserts = Self.factUpserts(facts, now: now, counted: true)
        for upsert in upserts.transactions + upserts.renewals { try db.cached(upsert.sql).bind(upsert.values).runLater() }
        try writeLatestReceipt(facts, now: now)
        try db.cached("SELECT changed_rows, changed_subscriber FROM receiptd_save_end(?)").bind([now]).runLater {
            [weak db] rows in
            let changed = rows.compactMap { $0.count > 1 ? $0[1] : nil }
            sent.outcome = (Int(rows.first?.first.flatMap(\.self) ?? "0") ?? 0, changed)
            if let db { ChangeLog(db).noted(changed) }
        }
        return sent
    }

    /// ``upsertTransactionSQLs``, each row written counting itself in the save's changes.
    static let upsertTransactionCountedSQLs = upsertTransactionSQLs.map { $0 + "\nRETURNING receiptd_save_changed()" }

    /// ``upsertRenewalSQL``, and the row written, if any, appended to the history and counted in
    /// the save's changes: observed now, or (`?24`, when the store dated the change) at that date
    /// kept after the snapshot it replaces and not after now (`?25`), as ``save(_:for:holders:now:)``.
    static let upsertRenewalCountedSQL = """
        WITH written AS (
        \(upsertRenewalSQL)
        RETURNING *
        )
        INSERT INTO renewal_history (\(renewalColumnNames.joined(separator: ", ")), observed_at)
        SELECT \(renewalColumns("w")),
            CASE WHEN ?24::bigint IS NULL THEN ?25::bigint ELSE least(?25::bigint, greatest(?24::bigint,
                (SELECT max(h.observed_at) FROM renewal_history h WHERE h.original_transaction_id = w.original_transaction_id)))
            END
        FROM written w
        RETURNING receiptd_save_changed()
        """
}
