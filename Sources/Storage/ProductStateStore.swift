package import DatabaseEngine

/// Each subscriber's products as their document last read them (Migrations/0013_console.sql),
/// for the overview's counts: derived, rewritten whenever a subscriber's state is recorded.
package struct ProductStateStore {
    private let db: Database

    package init(_ database: Database) { db = database }

    /// One product of one kind and how it stands.
    package struct Entry: Sendable, Equatable {
        /// `subscription`, a product type (`non_consumable`, …), or `promotional`.
        package var kind: String
        /// The product id, or a promotional entitlement's name.
        package var productID: String
        package var state: String

        package init(kind: String, productID: String, state: String) {
            self.kind = kind
            self.productID = productID
            self.state = state
        }
    }

    /// Replaces `appUserID`'s entries, in the caller's transaction. How long they stay good
    /// (`summary_until`, the document's next change in time) is written by the settle beside them,
    /// with the row it updates
    /// (``ReceiptStore/settle(_:hash:derivedFrom:version:now:document:summaryUntil:ahead:)``).
    package func replace(_ entries: [Entry], for appUserID: String) throws {
        // Nothing here is read back: on PostgreSQL it all goes with the next statement (runLater).
        try db.cached("DELETE FROM product_states WHERE app_user_id = ?").bind([appUserID]).runLater()
        let insert = try db.cached(
            "INSERT INTO product_states (app_user_id, slot, kind, product_id, state) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING"
        )
        for e in entries { try insert.bind([appUserID, e.kind + ":" + e.productID, e.kind, e.productID, e.state]).runLater() }
    }

    /// Up to `limit` subscribers whose entries went stale by `now`, the stalest first.
    package func stale(at now: Int64, limit: Int) throws -> [String] {
        let q = try db.cached("SELECT app_user_id FROM subscribers WHERE summary_until <= ? ORDER BY summary_until LIMIT ?")
            .bind([now, Int64(limit)])
        var ids: [String] = []
        while try q.step() { ids.append(q.text(0)!) }
        return ids
    }

    /// How many subscribers there are.
    package func subscriberCount() throws -> Int {
        let q = try db.cached("SELECT count(*) FROM subscribers")
        defer { q.reset() }
        return Int(try q.firstInt() ?? 0)
    }

    /// How many subscribers' entries are stale at `now`.
    package func staleCount(at now: Int64) throws -> Int {
        let q = try db.cached("SELECT count(*) FROM subscribers WHERE summary_until <= ?").bind([now])
        defer { q.reset() }
        return Int(try q.firstInt() ?? 0)
    }

    /// Subscribers per (kind, product, state), counting only fresh entries at `now`.
    package func counts(at now: Int64) throws -> [(entry: Entry, subscribers: Int)] {
        let q = try db.cached(
            """
            SELECT p.kind, p.product_id, p.state, count(*) FROM product_states p
            JOIN subscribers s ON s.app_user_id = p.app_user_id
            WHERE s.summary_until > ?
            GROUP BY p.kind, p.product_id, p.state
            """
        ).bind([now])
        var rows: [(Entry, Int)] = []
        while try q.step() {
            rows.append((Entry(kind: q.text(0)!, productID: q.text(1)!, state: q.text(2)!), Int(q.int(3))))
        }
        return rows.sorted { ($0.0.kind, $0.0.productID, $0.0.state) < ($1.0.kind, $1.0.productID, $1.0.state) }
    }
}
