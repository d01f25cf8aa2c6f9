package import AppStore
import Clocks
import DatabaseEngine
import Entitlements
import JSON
import Logging
import Storage

/// An app posts StoreKit's AppTransaction for its user (Docs/offers.md "AppTransaction"):
/// verified like any of Apple's signed data and kept for the person, so offers can name a customer
/// who never bought anything by their `appTransactionId`. The same Apple Account under another
/// app user id is logged (the answer never names the other ids).
package struct RecordAppTransaction: UseCase, Sendable {
    package struct Recorded: Sendable, Equatable {
        package var record: AppTransaction
        /// Whether another app user id holds the same Apple Account.
        package var shared: Bool
    }

    let verifier: SignedDataVerifier
    package let context: UseCaseContext
    /// The document after the AppTransaction is kept (a grandfathered entitlement appears, with
    /// its event), read as a GET reads it; nil: left to the next read.
    let read: ReadSubscriber?
    /// Asks Apple for a customer's AppTransaction (Get App Transaction Info); nil: not configured.
    let serverAPI: ServerAPIClient?
    let bundleIDs: [String]

    package init(
        context: UseCaseContext, verifier: SignedDataVerifier, read: ReadSubscriber? = nil, serverAPI: ServerAPIClient? = nil,
        bundleIDs: [String] = []
    ) {
        self.read = read
        self.serverAPI = serverAPI
        self.bundleIDs = bundleIDs
        self.verifier = verifier
        self.context = context
    }

    package func callAsFunction(appUserID: String, signedAppTransaction: String) async throws(ReceiptError) -> Recorded {
        _ = try FieldRules.appUserID(appUserID)
        let begun = clock.now()
        try FieldRules.jws(signedAppTransaction, field: "signed_app_transaction")
        let app: SignedAppTransaction
        do { app = try await verifier.appTransaction(signedAppTransaction) } catch {
            logger.notice("app transaction refused", metadata: ["reason": "\(error.code)"])
            throw .signedData(error)
        }
        return try await keep(app, for: appUserID, begun: begun)
    }

    /// Asks Apple for the AppTransaction of a customer known only by their purchases (Get App
    /// Transaction Info, by their newest App Store transaction) and keeps it as if their app had
    /// posted it.
    package func fetch(appUserID: String) async throws(ReceiptError) -> Recorded {
        _ = try FieldRules.appUserID(appUserID)
        guard let serverAPI else { throw .notConfigured(.serverAPI) }
        let begun = clock.now()  // before Apple is asked: an erasure since then wins
        let held: (String, String?)?
        do {
            held = try await database.read { db -> (String, String?)? in
                guard let subscriber = try ReceiptStore(db).subscriber(appUserID) else { return nil }
                guard
                    let newest = subscriber.purchases.filter({ $0.fact.store == .appStore }).max(by: {
                        ($0.fact.purchaseDate ?? 0, $0.fact.transactionID) < ($1.fact.purchaseDate ?? 0, $1.fact.transactionID)
                    })
                else { return ("", nil) }
                return (newest.fact.transactionID, newest.bundleID)
            }
        } catch {
            logger.error("app transaction: the purchases could not be read", metadata: ["error": "\(error)"])
            throw .internalFault
        }
        guard let held else { throw .subscriberNotFound }
        guard !held.0.isEmpty else {
            throw .invalidRequest("They hold no App Store purchase: Apple finds an AppTransaction by a transaction of theirs.")
        }
        guard let bundle = held.1 ?? (bundleIDs.count == 1 ? bundleIDs.first : nil) else {
            throw .invalidRequest("The purchase names no app and several are configured.")
        }
        let app: SignedAppTransaction
        do { app = try await serverAPI.appTransactionInfo(held.0, bundleID: bundle) } catch {
            throw ReceiptError(error, logger: logger)
        }
        return try await keep(app, for: appUserID, begun: begun)
    }

    /// Keeps a verified AppTransaction for the person, then derives their document.
    private func keep(_ app: SignedAppTransaction, for appUserID: String, begun: Int64) async throws(ReceiptError)
        -> Recorded
    {
        guard let id = app.appTransactionID else {
            throw .invalidRequest("The AppTransaction has no appTransactionId (StoreKit sends it from iOS 18.4 on).")
        }
        let environment = (app.environment ?? "production").lowercased()
        let now = clock.now()
        let recorded: Recorded
        do {
            recorded = try await database.write { db in
                let canonical = try ReceiptStore(db).canonical(appUserID)
                try ErasedIDs(db).check([appUserID, canonical], since: begun)
                // A subscriber from now on, if not yet: what is kept of them can be exported and erased.
                try ReceiptStore(db).addSubscriber(canonical, now: now)
                let record = AppTransactionRecord(
                    appUserID: canonical, appTransactionID: id, bundleID: app.bundleID, environment: environment,
                    originalApplicationVersion: app.originalApplicationVersion, originalPurchaseDate: app.originalPurchaseDate,
                    originalPlatform: app.originalPlatform, rawJSON: AppleFacts.unsigned(app.raw))
                let others = try AppTransactionStore(db).save(record, now: now)
                if !others.isEmpty {
                    logger.notice(
                        "one Apple Account under several app user ids",
                        metadata: ["app_user_id": "\(canonical)", "others": "\(others.count)"])
                }
                return Recorded(record: AppTransaction(record), shared: !others.isEmpty)
            }
        } catch is ErasedIDs.ErasedMeanwhile {
            throw .erasedMeanwhile
        } catch {
            logger.error("an app transaction could not be stored", metadata: ["error": "\(error)"])
            throw .internalFault
        }
        // Derived now, so a grandfathered entitlement is granted (event, webhook) when it is kept.
        if let read { _ = try await read.document(recorded.record.appUserID) }
        return recorded
    }
}
