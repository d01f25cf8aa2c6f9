package import DatabaseEngine
package import Entitlements
import Identifiers

/// What `receiptd backfill-prices` reads and writes (Migrations/0017_price_history.sql): the App
/// Store purchases with a transaction no store has priced and nobody has asked Apple about yet,
/// and the prices Apple's transaction history gives them.
package struct PriceBackfillStore {
    private let db: Database

    package init(_ database: Database) { db = database }

    /// A purchase to ask Get Transaction History about, by one of its unpriced transactions.
    package struct Unpriced: Sendable, Equatable {
        package var originalTransactionID: String
        package var transactionID: String
        package var bundleID: String
    }

    /// Up to `limit` purchases after `after` (by original transaction id) with an App Store
    /// transaction priced by nobody or only by the client, never asked about.
    package func unpriced(after: String?, limit: Int) throws -> [Unpriced] {
        let q = try db.cached(
            """
            SELECT original_transaction_id, min(transaction_id), min(bundle_id) FROM transactions
            WHERE price_history_asked_at IS NULL AND (price_source IS NULL OR price_source = 'client')
                AND store = 'app_store' AND original_transaction_id > ?
            GROUP BY original_transaction_id ORDER BY original_transaction_id LIMIT ?
            """
        ).bind([after ?? "", Int64(limit)])
        var rows: [Unpriced] = []
        while try q.step() {
            rows.append(Unpriced(originalTransactionID: q.text(0)!, transactionID: q.text(1)!, bundleID: q.text(2)!))
        }
        return rows
    }

    /// Gives each stored transaction of `bundleID` that Apple's history priced its price (source
    /// `store_history`) where it has none or only the client's, and the terms it lacks (the
    /// storefront, the offer…, which verifyReceipt never states); then marks `original`'s
    /// transactions asked. Returns the holders whose facts changed (the change recorded) and how
    /// many transactions were priced.
    package func applyHistory(
        _ priced: [(transactionID: String, commerce: Commerce)], bundleID: String, original: String, now: Int64
    ) throws -> (holders: [String], priced: Int) {
        let update = try db.cached(
            """
            UPDATE transactions SET price = ?, currency = ?, price_source = 'store_history', updated_at = ?,
                \(ReceiptStore.termColumns.map { "\($0) = coalesce(\($0), ?)" }.joined(separator: ", "))
            WHERE transaction_id = ? AND bundle_id = ? AND (price IS NULL OR \(ReceiptStore.priceRank("transactions")) > ?)
            RETURNING original_transaction_id
            """)
        let rank = Int64(PriceSource.allCases.firstIndex(of: .storeHistory)!)
        var changedOriginals: Set<Identifier> = []
        var count = 0
        defer { update.reset() }  // an UPDATE … RETURNING stepped once is still running until reset
        for (transactionID, commerce) in priced {
            guard let price = commerce.price else { continue }
            let terms = Array(ReceiptStore.commerceValues(commerce).prefix(ReceiptStore.termColumns.count))
            // The row's purchase comes back with the update (none when it was not better).
            guard
                let changed = try update.bind([price.milliunits, price.currency, now] + terms + [transactionID, bundleID, rank])
                    .firstText()
            else { continue }
            count += 1
            changedOriginals.insert(Identifier(changed))
        }
        try db.cached("UPDATE transactions SET price_history_asked_at = ? WHERE original_transaction_id = ?")
            .bind([now, original]).run()
        var holders: [String] = []
        let owner = try db.cached("SELECT app_user_id FROM ownership WHERE original_transaction_id = ?")
        for original in changedOriginals.sorted() {
            if let user = try owner.bind([original.string]).firstText(), !holders.contains(where: { $0.isExactly(user) }) {
                holders.append(user)
            }
        }
        try ReceiptStore(db).factsChanged(holders, at: now)
        return (holders, count)
    }

    /// Forgets every ask, so the next backfill asks about every unpriced purchase again.
    package func forgetAsks() throws -> Int {
        try db.cached("UPDATE transactions SET price_history_asked_at = NULL WHERE price_history_asked_at IS NOT NULL").run()
        return db.changes
    }
}
