package import DatabaseEngine
package import Identifiers

/// Reads and writes lifecycle events (Migrations/0003_history.sql). Synchronous: use it inside
/// `DatabaseQueue.run`, in the same transaction as the facts the events were derived from.
package struct EventStore {
    /// What a ``replace(_:for:originals:now:)`` changed.
    package struct Changes: Sendable, Equatable {
        package var added = 0
        package var removed = 0
        package var changed = 0
        package var isEmpty: Bool { added == 0 && removed == 0 && changed == 0 }
        package init() {}
    }

    private let db: Database

    package init(_ database: Database) { db = database }

    /// Makes the stored events of `appUserID` about the purchases in `originals` (and its transfers)
    /// exactly `events`: new keys are inserted, vanished ones deleted, changed ones updated. Events
    /// about purchases the subscriber no longer holds stay: they are their history. `inserted`, when
    /// given, sees each new row as stored (its id and recording time set), in the caller's
    /// transaction; without it, nothing is read back, and on PostgreSQL the insert goes with the
    /// next statement awaited (the commit). `read`: the stored events as the caller read them
    /// (``storedEvents(in:)``) in a snapshot its transaction's compare-and-set holds it to; else
    /// they are read here.
    package func replace(
        _ events: [EventRecord], for appUserID: String, originals: Set<Identifier>, now: Int64,
        inserted: ((EventRecord) throws -> Void)? = nil, read: [EventRecord]? = nil
    ) throws -> Changes {
        var stored: [Identifier: EventRecord] = [:]
        for e in try read ?? storedEvents(in: try storedEvents(for: appUserID)) {
            // Events about no purchase (merges, promotions) are the subscriber's own.
            if e.originalTransactionID.isEmpty || originals.contains(Identifier(e.originalTransactionID)) || e.type == "transfer"
            {
                stored[Identifier(e.key)] = e
            }
        }
        var changes = Changes()
        var new: [EventRecord] = []
        let update = try db.cached(
            """
            UPDATE events SET type = ?, at = ?, product_id = ?, original_transaction_id = ?, transaction_id = ?, facts_json = ?
            WHERE id = ?
            """)
        for e in events {
            if let old = stored.removeValue(forKey: Identifier(e.key)) {
                guard !old.sameContent(as: e) else { continue }
                try update.bind([e.type, e.at, e.productID, e.originalTransactionID, e.transactionID, e.factsJSON, old.id])
                    .runLater()
                changes.changed += 1
            } else {
                new.append(e)
            }
        }
        // Several rows a statement (on PostgreSQL one round trip for what took one each), each
        // row's id read back by its key when the caller wants them.
        for start in stride(from: 0, to: new.count, by: Self.insertedPerStatement) {
            let batch = new[start..<min(start + Self.insertedPerStatement, new.count)]
            let values = batch.flatMap { e -> [(any StatementValue)?] in
                [appUserID, e.key, e.type, e.at, e.productID, e.originalTransactionID, e.transactionID, e.factsJSON, now]
            }
            changes.added += batch.count
            guard let inserted else {
                try db.cached(Self.insertSQLs[batch.count]).bind(values).runLater()
                continue
            }
            let insert = try db.cached(Self.insertReturningSQLs[batch.count]).bind(values)
            var ids: [Identifier: Int64] = [:]
            while try insert.step() { ids[Identifier(insert.text(1)!)] = insert.int(0) }
            for e in batch {
                var stored = e
                guard let id = ids[Identifier(e.key)] else {
                    throw StorageError(db.dialect == .sqlite ? .sqlite : .postgres, "an inserted event's id was not returned")
                }
                (stored.id, stored.recordedAt) = (id, now)
                try inserted(stored)
            }
        }
        let delete = try db.cached("DELETE FROM events WHERE id = ?")
        for old in stored.values {
            try delete.bind([old.id]).runLater()
            changes.removed += 1
        }
        return changes
    }

    /// The read of `appUserID`'s stored events ``replace(_:for:originals:now:inserted:)`` starts
    /// with, bound: a caller may send it ahead with a statement of its own
    /// (``Database/prefetch(_:)``), and `replace` then steps through what it read.
    package func storedEvents(for appUserID: String) throws -> Statement {
        try db.cached("SELECT \(Self.columns) FROM events WHERE app_user_id = ?").bind([appUserID])
    }

    /// The rows of a ``storedEvents(for:)`` read, stepped through and reset.
    package func storedEvents(in read: Statement) throws -> [EventRecord] {
        defer { read.reset() }
        var events: [EventRecord] = []
        while try read.step() { events.append(Self.event(read)) }
        return events
    }

    /// The most events one insert writes, and its statement for each count, written once.
    static let insertedPerStatement = 16
    static let insertSQLs = (0...insertedPerStatement).map { count in
        """
        INSERT INTO events (app_user_id, event_key, type, at, product_id, original_transaction_id, transaction_id,
            facts_json, recorded_at) VALUES \(Array(repeating: "(?, ?, ?, ?, ?, ?, ?, ?, ?)", count: count).joined(separator: ", "))
        """
    }
    /// ``insertSQLs``, each reading back the rows' ids by their keys.
    static let insertReturningSQLs = insertSQLs.map { $0 + " RETURNING id, event_key" }

    /// Events of `appUserID`, newest first (by `at`, then id), `limit` of them, strictly older than `before`.
    /// Events per bucket of `width` milliseconds from `from` (bucket 0) to `to`, per type.
    package func counts(from: Int64, to: Int64, width: Int64) throws -> [(bucket: Int, type: String, count: Int)] {
        let q = try db.cached(
            """
            SELECT (at - ?1) / ?2 AS bucket, type, count(*) FROM events WHERE at >= ?1 AND at < ?3
            GROUP BY bucket, type
            """
        ).bind([from, width, to])
        var rows: [(Int, String, Int)] = []
        while try q.step() { rows.append((Int(q.int(0)), q.text(1)!, Int(q.int(2)))) }
        return rows
    }

    package func page(for appUserID: String, limit: Int, before: (at: Int64, id: Int64)?) throws -> [EventRecord] {
        let q: Statement
        if let before {
            q = try db.cached(
                """
                SELECT \(Self.columns) FROM events WHERE app_user_id = ? AND (at < ? OR (at = ? AND id < ?))
                ORDER BY at DESC, id DESC LIMIT ?
                """
            ).bind([appUserID, before.at, before.at, before.id, Int64(limit)])
        } else {
            q = try db.cached("SELECT \(Self.columns) FROM events WHERE app_user_id = ? ORDER BY at DESC, id DESC LIMIT ?")
                .bind([appUserID, Int64(limit)])
        }
        var result: [EventRecord] = []
        while try q.step() { result.append(Self.event(q)) }
        return result
    }

    static let columns = "id, event_key, type, at, product_id, original_transaction_id, transaction_id, facts_json, recorded_at"

    static func event(_ s: Statement) -> EventRecord {
        EventRecord(
            id: s.int(0), key: s.text(1)!, type: s.text(2)!, at: s.int(3), productID: s.text(4)!,
            originalTransactionID: s.text(5)!, transactionID: s.text(6), factsJSON: s.text(7)!, recordedAt: s.int(8))
    }
}
