import DatabaseEngine
package import Entitlements
import Identifiers

/// A purchase that has moved between app users (`GET /v1/admin/shared-receipts`).
package struct SharedReceipt: Sendable, Equatable {
    package var originalTransactionID: String
    /// How many distinct users have held it.
    package var users: Int
    /// Who holds it now.
    package var holder: String?
    /// Every change of holder, oldest first (the first one has no `from`).
    package var transfers: [Transfer]
}

extension ReceiptStore {
    /// Purchases held by more than `moreThan` distinct users, most users first, then by id;
    /// `after` continues from the last row of the previous page.
    package func sharedReceipts(moreThan: Int, limit: Int, after: (users: Int, original: String)? = nil) throws
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
