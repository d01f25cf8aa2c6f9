/// The change log (Migrations/0007_changes.sql): which subscriber changed, in commit order.
/// Synchronous: use it inside `DatabaseQueue.write` or `read`.
package struct ChangeLog {
    /// One write that changed a subscriber.
    package struct Change: Sendable, Equatable {
        package var sequence: Int64
        package var appUserID: String
        package var at: Int64

        package init(sequence: Int64, appUserID: String, at: Int64) {
            self.sequence = sequence
            self.appUserID = appUserID
            self.at = at
        }
    }

    private let db: Database

    package init(_ database: Database) { db = database }

    /// Records that `appUserID`'s facts or version changed, in the caller's transaction. On
    /// PostgreSQL it is also noted for this process's ``ChangeFeed`` and notified on
    /// ``notifyChannel`` for the others' (sent at commit, in commit order; none on rollback).
    package func append(_ appUserID: String, at now: Int64) throws {
        guard db.dialect == .postgresql else {
            return try db.cached("INSERT INTO changes (app_user_id, at) VALUES (?, ?)").bind([appUserID, now]).run()
        }
        // One statement, one round trip: a WITH's INSERT runs whether or not the query reads it.
        try db.cached(
            "WITH logged AS (INSERT INTO changes (app_user_id, at) VALUES (?1, ?2)) SELECT pg_notify('\(Self.notifyChannel)', ?1)"
        ).bind([appUserID, now]).runLater()
        db.noteChange(appUserID)
    }

    /// Notes changes of `appUserIDs` that the server appended in the current transaction itself
    /// (a whole save's: Migrations/postgresql/0045_whole_saves.sql), for this process's
    /// ``ChangeFeed``, as ``append(_:at:)`` notes its own.
    package func noted(_ appUserIDs: [String]) {
        for user in appUserIDs { db.noteChange(user) }
    }

    /// The "app user id" of a change to every subscriber, which no app user id can be: followers
    /// forget everything they hold. An ``Erasure`` appends it, since its own change may not name
    /// whom it erased.
    package static let everyone = ""

    /// The PostgreSQL channel changes are notified on: the payload is the app user id.
    package static let notifyChannel = "receiptd_changes"

    /// The changes after `sequence`, oldest first, `limit` at most.
    package func since(_ sequence: Int64, limit: Int) throws -> [Change] {
        let q = try db.cached("SELECT sequence, app_user_id, at FROM changes WHERE sequence > ? ORDER BY sequence LIMIT ?")
            .bind([sequence, Int64(limit)])
        var changes: [Change] = []
        while try q.step() { changes.append(Change(sequence: q.int(0), appUserID: q.text(1)!, at: q.int(2))) }
        return changes
    }

    /// The sequence to follow on from so as to miss no change committed after `since` (an
    /// instant): one before the first change written since then, or the newest when none was. On
    /// PostgreSQL sequences are taken before commit, so a change numbered below the newest may
    /// still be committing; any that is was written after `since`.
    package func followFrom(since: Int64) throws -> Int64 {
        // Newest first along the key, a page at a time, so only the recent tail is read.
        let q = try db.cached("SELECT sequence, at FROM changes WHERE sequence < ? ORDER BY sequence DESC LIMIT 1000")
        var below = Int64.max
        var from: Int64?
        while true {
            try q.bind([below])
            var read = 0
            while try q.step() {
                read += 1
                below = q.int(0)
                if q.int(1) < since {
                    q.reset()
                    return from ?? below
                }
                from = below - 1
            }
            if read < 1000 { return from ?? 0 }
        }
    }

    /// The newest change's sequence (0 when there is none): what a read in the same transaction
    /// has seen. On PostgreSQL the ``ChangeFeed``'s mark taken as the transaction began (the
    /// sequences observers hear there are the feed's).
    package func last() throws -> Int64 {
        if db.dialect == .postgresql { return db.snapshotMark }
        let q = try db.cached("SELECT max(sequence) FROM changes")
        defer { q.reset() }
        guard try q.step(), !q.isNull(0) else { return 0 }
        return q.int(0)
    }
}
