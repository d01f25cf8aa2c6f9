import Clocks
import JSON
import Logging
import SignedData
import Storage

/// An app posts StoreKit's AppTransaction for its user (Docs/offers.md "AppTransaction"):
/// verified like any of Apple's signed data and kept for the person, so offers can name a customer
/// who never bought anything by their `appTransactionId`. The same Apple Account under another
/// app user id is logged (the answer never names the other ids).
package struct RecordAppTransaction: Sendable {
    package struct Recorded: Sendable, Equatable {
        package var record: AppTransactionRecord
        /// Whether another app user id holds the same Apple Account.
        package var shared: Bool
    }

    let verifier: SignedDataVerifier
    let database: DatabaseQueue
    /// The document after the AppTransaction is kept (a grandfathered entitlement appears, with
    /// its event), read as a GET reads it; nil: left to the next read.
    let read: ReadSubscriber?
    let logger: Logger
    let clock: WallClock

    package init(
        verifier: SignedDataVerifier, database: DatabaseQueue, read: ReadSubscriber? = nil, logger: Logger, clock: WallClock
    ) {
        self.read = read
        self.verifier = verifier
        self.database = database
        self.logger = logger
        self.clock = clock
    }

    package func callAsFunction(appUserID: String, signedAppTransaction: String) async throws(ReceiptError) -> Recorded {
        _ = try FieldRules.appUserID(appUserID)
        try FieldRules.jws(signedAppTransaction, field: "signed_app_transaction")
        let app: SignedAppTransaction
        do { app = try await verifier.appTransaction(signedAppTransaction) } catch {
            logger.notice("app transaction refused", metadata: ["reason": "\(error.code)"])
            throw .signedData(error)
        }
        guard let id = app.appTransactionID else {
            throw .invalidRequest("The AppTransaction has no appTransactionId (StoreKit sends it from iOS 18.4 on).")
        }
        let environment = (app.environment ?? "production").lowercased()
        let now = clock.now()
        let recorded: Recorded
        do {
            recorded = try await database.write { db in
                let canonical = try ReceiptStore(db).canonical(appUserID)
                // A subscriber from now on, if not yet: what is kept of them can be exported and erased.
                try ReceiptStore(db).addSubscriber(canonical, now: now)
                let record = AppTransactionRecord(
                    appUserID: canonical, appTransactionID: id, bundleID: app.bundleID, environment: environment,
                    originalApplicationVersion: app.originalApplicationVersion, originalPurchaseDate: app.originalPurchaseDate,
                    originalPlatform: app.originalPlatform, rawJSON: WireMapping.unsigned(app.raw))
                let others = try AppTransactionStore(db).save(record, now: now)
                if !others.isEmpty {
                    logger.notice(
                        "one Apple Account under several app user ids",
                        metadata: ["app_user_id": "\(canonical)", "others": "\(others.count)"])
                }
                return Recorded(record: record, shared: !others.isEmpty)
            }
        } catch {
            logger.error("an app transaction could not be stored", metadata: ["error": "\(error)"])
            throw .internalFault
        }
        // Derived now, so a grandfathered entitlement is granted (event, webhook) when it is kept.
        if let read { _ = try await read.document(recorded.record.appUserID) }
        return recorded
    }
}
