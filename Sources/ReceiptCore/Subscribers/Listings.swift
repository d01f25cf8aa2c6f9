import DatabaseEngine
import Entitlements
import Logging
import Storage

/// What support and backends list: the latest notifications with their outcome, and purchases
/// passed between app users. Pages run newest (or most shared) first.
package struct Listings: UseCase, Sendable {
    package let context: UseCaseContext

    package init(context: UseCaseContext) {
        self.context = context
    }

    /// A page and the cursor of the next one (nil: the last page).
    package struct Page<Row: Sendable, Cursor: Sendable>: Sendable {
        package var rows: [Row]
        package var next: Cursor?

        /// The first `limit` of `rows`, read with one more than `limit` so that one past the last
        /// says there are more: then `next` is the last row's cursor.
        package init(of rows: [Row], limit: Int, cursor: (Row) -> Cursor) {
            self.rows = Array(rows.prefix(limit))
            next = rows.count > limit ? self.rows.last.map(cursor) : nil
        }
    }

    /// `limit` deliveries with ids below `before` that match `filter`, newest first.
    package func notifications(limit: Int, before: Int64?, filter: NotificationFilter = .init()) async throws(ReceiptError)
        -> Page<Notification, Int64>
    {
        let kept = NotificationStore.Filter(type: filter.type, outcome: filter.outcome, appUserID: filter.appUserID)
        let rows = try await read { db in try NotificationStore(db).latest(limit: limit + 1, before: before, filter: kept) }
        return Page(of: rows.map(Notification.init), limit: limit, cursor: \.id)
    }

    /// `limit` shadow-mode differences with ids below `before`, newest first.
    package func shadowDiffs(limit: Int, before: Int64?) async throws(ReceiptError) -> Page<Listings.ShadowDiff, Int64> {
        let rows = try await read { db in try ShadowDiffStore(db).latest(limit: limit + 1, before: before) }
        return Page(of: rows.map(Listings.ShadowDiff.init), limit: limit, cursor: \.id)
    }

    /// Where a page of shared receipts starts: after `users` holders and `original`.
    package struct SharedCursor: Sendable, Equatable {
        package var users: Int
        package var original: String
        package init(users: Int, original: String) {
            self.users = users
            self.original = original
        }
    }

    /// The purchases that moved between more than `moreThan` app users, most users first, each
    /// with its holder and every transfer.
    package func sharedReceipts(moreThan: Int, limit: Int, after: SharedCursor?) async throws(ReceiptError)
        -> Page<SharedPurchase, SharedCursor>
    {
        let rows = try await read { db in
            try ReceiptStore(db).sharedReceipts(
                moreThan: moreThan, limit: limit + 1, after: after.map { ($0.users, $0.original) })
        }
        return Page(of: rows.map(SharedPurchase.init), limit: limit) {
            SharedCursor(users: $0.users, original: $0.originalTransactionID)
        }
    }

    /// Apple Accounts whose AppTransaction was posted under more than `moreThan` app user ids, most
    /// ids first (`SharedCursor.original` is the `appTransactionId`).
    package func sharedAppAccounts(moreThan: Int, limit: Int, after: SharedCursor?) async throws(ReceiptError)
        -> Page<SharedAccount, SharedCursor>
    {
        let rows = try await read { db in
            try AppTransactionStore(db).shared(
                moreThan: moreThan, limit: limit + 1, after: after.map { ($0.users, $0.original) })
        }
        return Page(of: rows.map(SharedAccount.init), limit: limit) {
            SharedCursor(users: $0.users, original: $0.appTransactionID)
        }
    }

    /// A stored purchase found by any of its transaction ids (or its original's), and who holds it.
    package struct Holding: Sendable, Equatable {
        package var originalTransactionID: String
        package var productID: String?
        package var appUserID: String?
    }

    /// Who holds the purchase `transactionID` belongs to; ``ReceiptError/purchaseNotFound`` when
    /// no stored transaction or purchase has that id.
    package func holding(_ transactionID: String) async throws(ReceiptError) -> Holding {
        let found = try await read { db -> Holding? in
            let store = ReceiptStore(db)
            let original = try store.purchase(transactionID)?.fact.originalTransactionID ?? transactionID
            let holder = try store.owner(of: original)
            let product = try store.newestProduct(of: original)
            guard holder != nil || product != nil else { return nil }
            return Holding(originalTransactionID: original, productID: product, appUserID: holder)
        }
        guard let found else { throw .purchaseNotFound }
        return found
    }

    private func read<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws(ReceiptError) -> T {
        do {
            // A list need see no one subscriber's changes: any replica within the lag bound.
            return try await database.read(replicaSeeing: [], body)
        } catch {
            logger.error("a listing failed", metadata: ["error": "\(error)"])
            throw .internalFault
        }
    }
}
