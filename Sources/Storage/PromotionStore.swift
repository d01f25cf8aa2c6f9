package import DatabaseEngine
package import Entitlements

/// Promotional entitlements (Migrations/0013_console.sql): given, revoked and read as facts. Each
/// change bumps the subscriber's facts revision, so their state is derived again on the next read.
package struct PromotionStore {
    private let db: Database

    package init(_ database: Database) { db = database }

    /// A subscriber's promotions (``promotions(of:)``; ``ReceiptStore/subscriber(_:)`` prefetches it).
    static let promotionsSQL = """
        SELECT id, entitlement, starts_at, expires_at, granted_by, reason, revoked_at, revoked_by, revoke_reason
        FROM promotions WHERE app_user_id = ?
        """

    /// `appUserID`'s promotions, oldest first.
    package func promotions(of appUserID: String) throws -> [Promotion] {
        let q = try db.cached(Self.promotionsSQL).bind([appUserID])
        var all: [Promotion] = []
        while try q.step() {
            all.append(
                Promotion(
                    id: q.int(0), entitlement: q.text(1)!, startsAt: q.int(2), expiresAt: q.int(3), grantedBy: q.text(4)!,
                    reason: q.text(5)!, revokedAt: q.optionalInt(6), revokedBy: q.text(7), revokeReason: q.text(8)))
        }
        return all.sorted { ($0.startsAt, $0.id) < ($1.startsAt, $1.id) }
    }

    /// Gives `appUserID` (an alias: the subscriber it names; unknown: a new subscriber)
    /// `entitlement` from `now` until `expiresAt`, in one transaction.
    package func grant(
        _ entitlement: String, to appUserID: String, until expiresAt: Int64, by asker: String, reason: String, now: Int64
    ) throws -> (appUserID: String, promotion: Promotion) {
        try db.transaction {
            let store = ReceiptStore(db)
            try store.lock(purchases: [], subscriber: appUserID)
            let canonical = try store.canonical(appUserID)
            try store.addSubscriber(canonical, now: now)
            let insert = try db.cached(
                """
                INSERT INTO promotions (app_user_id, entitlement, starts_at, expires_at, granted_by, reason)
                VALUES (?, ?, ?, ?, ?, ?) RETURNING id
                """
            ).bind([canonical, entitlement, now, expiresAt, asker, reason])
            _ = try insert.step()  // RETURNING: always one row
            let id = insert.int(0)
            insert.reset()
            try store.factsChanged([canonical], at: now)
            return (
                canonical,
                Promotion(
                    id: id, entitlement: entitlement, startsAt: now, expiresAt: expiresAt, grantedBy: asker, reason: reason)
            )
        }
    }

    /// Ends every promotion of `entitlement` that `appUserID` holds and that has not ended by
    /// `now`; nil when the subscriber is unknown. The promotions revoked, oldest first.
    package func revoke(_ entitlement: String, of appUserID: String, by asker: String, reason: String?, now: Int64) throws
        -> (appUserID: String, revoked: [Promotion])?
    {
        try db.transaction {
            let store = ReceiptStore(db)
            try store.lock(purchases: [], subscriber: appUserID)
            let canonical = try store.canonical(appUserID)
            guard try store.isSubscriber(canonical) else { return nil }
            let revoke = try db.cached(
                """
                UPDATE promotions SET revoked_at = ?, revoked_by = ?, revoke_reason = ?
                WHERE app_user_id = ? AND entitlement = ? AND revoked_at IS NULL AND expires_at > ?
                RETURNING id
                """
            ).bind([now, asker, reason, canonical, entitlement, now])
            var ids: Set<Int64> = []
            while try revoke.step() { ids.insert(revoke.int(0)) }
            if !ids.isEmpty { try store.factsChanged([canonical], at: now) }
            return (canonical, try promotions(of: canonical).filter { ids.contains($0.id) })
        }
    }
}
