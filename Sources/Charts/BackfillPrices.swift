package import AppStore
import Clocks
import DatabaseEngine
import Entitlements
import Logging
package import ReceiptCore
import Storage

/// `receiptd backfill-prices`: prices the App Store purchases verifyReceipt told receiptd about
/// (verifyReceipt states no money) by asking Get Transaction History once per purchase, through
/// the client's rate limiter. Each transaction the history prices gets that price with the source
/// `store_history` (better than the client's word, never replacing a signed one) and the terms it
/// lacked. A purchase asked about is marked (Migrations/0017_price_history.sql), so a run that
/// stops part-way resumes where it left off, and a later run asks only about new purchases.
package struct BackfillPrices: UseCase, Sendable {
    package struct Summary: Sendable, Equatable {
        /// Purchases Apple was asked about.
        package var asked = 0
        /// Transactions given a price.
        package var priced = 0
        /// Subscribers whose facts changed.
        package var subscribers = 0
        /// Purchases Apple does not know (marked asked: never asked again).
        package var unknown = 0
        /// Purchases whose history could not be read (not marked: the next run asks again).
        package var failed = 0
        /// Why the run stopped before the end (Apple unavailable, the key refused), else nil.
        package var stoppedBecause: String?
    }

    private let serverAPI: ServerAPIClient?
    package let context: UseCaseContext
    /// Purchases read from the database at a time.
    static let page = 200

    package init(context: UseCaseContext, serverAPI: ServerAPIClient?) {
        self.serverAPI = serverAPI
        self.context = context
    }

    /// Asks about every unpriced purchase not asked about yet (`again`: about every unpriced one),
    /// at most `limit` of them.
    package func callAsFunction(again: Bool = false, limit: Int = .max) async throws(ReceiptError) -> Summary {
        guard let serverAPI else { throw .notConfigured(.serverAPI) }
        if again { _ = try await store { db in try PriceBackfillStore(db).forgetAsks() } }
        var summary = Summary()
        var cursor: String?
        while summary.asked < limit, !Task.isCancelled {
            let (after, count) = (cursor, min(Self.page, limit - summary.asked))
            let batch: [PriceBackfillStore.Unpriced]
            do {
                batch = try await database.read { db in try PriceBackfillStore(db).unpriced(after: after, limit: count) }
            } catch {
                logger.error("backfill-prices: storage failed", metadata: ["error": "\(error)"])
                throw .notStored
            }
            guard !batch.isEmpty else { break }
            for purchase in batch {
                cursor = purchase.originalTransactionID
                summary.asked += 1
                let history: [SignedTransaction]
                do {
                    history = try await serverAPI.transactionHistory(of: purchase.transactionID, bundleID: purchase.bundleID)
                        .transactions
                } catch {
                    switch error {
                    case .notFound, .invalidTransactionID, .invalidIdentifier, .rejected:
                        summary.unknown += 1
                        history = []
                    case .unauthorized, .unavailable:
                        summary.failed += 1
                        summary.stoppedBecause = error.description
                        logger.warning("backfill-prices stopped", metadata: ["error": "\(error)"])
                        return summary
                    case .badAnswer, .signedData:
                        summary.failed += 1
                        logger.warning(
                            "backfill-prices: a history could not be read",
                            metadata: ["original_transaction_id": "\(purchase.originalTransactionID)", "error": "\(error)"])
                        continue
                    }
                }
                let priced = history.compactMap { t -> (transactionID: String, commerce: Commerce)? in
                    var commerce = AppleFacts.commerce(t)
                    guard commerce.price != nil else { return nil }
                    commerce.price?.source = .storeHistory
                    return (t.transactionID, commerce)
                }
                let now = clock.now()
                let (holders, count) = try await store { db in
                    try db.transaction(durable: true) {
                        try PriceBackfillStore(db).applyHistory(
                            priced, bundleID: purchase.bundleID, original: purchase.originalTransactionID, now: now)
                    }
                }
                summary.priced += count
                summary.subscribers += holders.count
            }
        }
        return summary
    }

    private func store<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws(ReceiptError) -> T {
        do {
            return try await database.write(body)
        } catch {
            logger.error("backfill-prices: storage failed", metadata: ["error": "\(error)"])
            throw .notStored
        }
    }
}
