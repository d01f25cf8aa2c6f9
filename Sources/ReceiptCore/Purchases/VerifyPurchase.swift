package import AppStore
import Clocks
import DatabaseEngine
import Entitlements
import FoundationEssentials
import Identifiers
import Logging
import Storage

/// Verify a purchase for an app user and store what it proves: an app receipt through Apple's
/// verifyReceipt (or, in `server_api` mode, its transaction id through the App Store Server API),
/// a transaction id through the App Store Server API, or StoreKit 2's signed transaction verified
/// here. The answer is the user's document; a refusal is a ``ReceiptError``.
package struct VerifyPurchase: UseCase, Sendable {
    /// What the app sends.
    package struct Input: Sendable, Equatable {
        package var appUserID: String
        package var proof: Proof
        /// The app it is for; may be omitted when one app is configured.
        package var bundleID: String?
        package var excludeOldTransactions: Bool
        /// What a StoreKit 1 app knows of the price it showed: kept for the purchase when no
        /// store states one (``PriceSource/client``).
        package var clientPrice: ClientPrice?
        /// Who posted it: a bare transaction id from an app moves nothing someone else holds.
        package var caller: Caller

        package init(
            appUserID: String, proof: Proof, bundleID: String? = nil, excludeOldTransactions: Bool = false,
            clientPrice: ClientPrice? = nil, caller: Caller = .app
        ) {
            self.caller = caller
            self.appUserID = appUserID
            self.proof = proof
            self.bundleID = bundleID
            self.excludeOldTransactions = excludeOldTransactions
            self.clientPrice = clientPrice
        }
    }

    /// The price an app says it charged for a product.
    package struct ClientPrice: Sendable, Equatable {
        package var productID: String
        package var milliunits: Int64
        package var currency: String

        package init(productID: String, milliunits: Int64, currency: String) {
            self.productID = productID
            self.milliunits = milliunits
            self.currency = currency
        }
    }

    /// The facts with the app's price on the newest transaction of its product that no store
    /// priced; unchanged when there is none.
    static func pricing(_ facts: VerifiedFacts, with price: ClientPrice?) -> VerifiedFacts {
        guard let price else { return facts }
        var facts = facts
        let candidates = facts.purchases.indices.filter {
            facts.purchases[$0].fact.productID.isExactly(price.productID) && facts.purchases[$0].fact.commerce.price == nil
        }
        guard
            let newest = candidates.max(by: {
                (facts.purchases[$0].fact.purchaseDate ?? 0) < (facts.purchases[$1].fact.purchaseDate ?? 0)
            })
        else { return facts }
        facts.purchases[newest].fact.commerce.price = Price(
            milliunits: price.milliunits, currency: price.currency, source: .client)
        return facts
    }

    /// The proof of purchase.
    package enum Proof: Sendable, Equatable {
        /// An app receipt (base64), verified by Apple's verifyReceipt.
        case receipt(String)
        /// StoreKit 2's JWS (and optionally the renewal info's), verified here.
        case signed(transaction: String, renewal: String?)
        /// Any transaction id of the customer (what a StoreKit 2 app has after a purchase): its
        /// history and subscription statuses asked of the App Store Server API.
        case transactionID(String)
    }

    /// Who answers for an app receipt (`appStore.verifier`).
    package enum Verifier: String, Sendable, CaseIterable {
        /// Apple's verifyReceipt (deprecated by Apple, still answering).
        case verifyReceipt = "verify_receipt"
        /// The receipt's transaction id is read from its PKCS#7 and the Server API asked instead.
        case serverAPI = "server_api"
        /// verifyReceipt answers; the Server API is asked too and the answers compared (``ShadowComparison``).
        case shadow
    }

    let client: VerifyReceiptClient
    /// The App Store Server API; nil when no In-App Purchase key is configured.
    let serverAPI: ServerAPIClient?
    let mode: Verifier
    /// `shadow` mode's comparison (made only in that mode); nil in the other modes.
    let shadow: ShadowComparison?
    let verifier: SignedDataVerifier
    package let context: UseCaseContext
    let bundleIDs: [String]

    package init(
        context: UseCaseContext, client: VerifyReceiptClient, serverAPI: ServerAPIClient? = nil, mode: Verifier = .verifyReceipt,
        shadow: ShadowComparison? = nil, verifier: SignedDataVerifier, bundleIDs: [String]
    ) {
        self.context = context
        self.client = client
        self.serverAPI = serverAPI
        self.mode = mode
        self.shadow = shadow
        self.verifier = verifier
        self.bundleIDs = bundleIDs
    }

    /// Holds the input to ``FieldRules``, whoever built it (the HTTP edge checks the same first).
    package static func validate(_ input: Input) throws(ReceiptError) {
        _ = try FieldRules.appUserID(input.appUserID)
        switch input.proof {
        case .receipt(let receipt): try FieldRules.receipt(receipt)
        case .signed(let transaction, let renewal):
            try FieldRules.jws(transaction, field: "signed_transaction")
            if let renewal { try FieldRules.jws(renewal, field: "signed_renewal_info") }
        case .transactionID(let id): try FieldRules.transactionID(id)
        }
        if let bundleID = input.bundleID { try FieldRules.bundleID(bundleID) }
    }

    package func callAsFunction(_ input: Input) async throws(ReceiptError) -> SubscriberSnapshot {
        try Self.validate(input)
        let begun = clock.now()  // before Apple is asked: an erasure since then wins
        do {
            var snapshot: SubscriberSnapshot
            switch input.proof {
            case .receipt(let receipt) where mode == .serverAPI:
                snapshot = try await verifyReceiptByServerAPI(receipt, input, begun: begun)
            case .receipt(let receipt): snapshot = try await verifyReceipt(receipt, input, begun: begun)
            case .signed(let transaction, let renewal):
                snapshot = try await verifySigned(transaction, renewal, input, begun: begun)
            case .transactionID(let id):
                snapshot = try await verifyTransactionID(
                    id, input, possession: input.caller == .app ? .bareID : .proven, begun: begun)
            }
            // A backend sees every purchase; an app, those it just proved it holds.
            if input.caller == .backend { snapshot.proven = nil }
            return snapshot
        } catch let error as ReceiptError {
            guard case .storeUnavailable(.appStore, let status, let retry, nil) = error else { throw error }
            var known = await lastKnown(input.appUserID)
            if input.caller == .app { known?.snapshot.proven = [] }  // nothing proved: no purchase named
            throw .storeUnavailable(.appStore, storeStatus: status, retryAfterSeconds: retry, lastKnown: known)
        } catch is ErasedIDs.ErasedMeanwhile {
            throw .erasedMeanwhile
        } catch {
            logger.error("verifying a purchase failed", metadata: ["error": "\(error)"])
            throw .internalFault
        }
    }

    /// The app a receipt or transaction id is for: the one given, or the only one configured.
    private func expectedBundle(_ input: Input) throws(ReceiptError) -> String {
        if let given = input.bundleID {
            guard bundleIDs.contains(given) else { throw ReceiptError.bundleMismatch("`bundle_id` is not a configured app.") }
            return given
        }
        guard bundleIDs.count == 1 else {
            throw ReceiptError.invalidRequest("`bundle_id` is required: several apps are configured.")
        }
        return bundleIDs[0]
    }

    /// `server_api` mode: the receipt is read only for a transaction id (§4.5); Apple's signed
    /// answer about it is what is stored. A receipt with no in-app purchase proves nothing to store.
    private func verifyReceiptByServerAPI(_ receiptData: String, _ input: Input, begun: Int64) async throws
        -> SubscriberSnapshot
    {
        let id: String?
        do { id = try AppReceipt.transactionID(base64: receiptData) } catch {
            throw ReceiptError.invalidRequest("`receipt_data` is not an app receipt (PKCS#7): \(error)")
        }
        guard let id else {
            let log = VerificationLogEntry(
                appUserID: input.appUserID, environment: nil, appleStatus: nil, outcome: .noTransactions, attempts: 0,
                latencyMs: 0)
            return try await store(
                VerifiedFacts(environment: .production, purchases: []), for: input.appUserID,
                begun: begun, log: log)
        }
        return try await verifyTransactionID(id, input, possession: .proven, begun: begun)  // the receipt is the device's proof
    }

    /// A transaction id: every page of the customer's history and their subscriptions' statuses
    /// (renewal info) from the App Store Server API, each signed payload verified, stored through
    /// the same save as every other source.
    private func verifyTransactionID(_ transactionID: String, _ input: Input, possession: Possession, begun: Int64)
        async throws
        -> SubscriberSnapshot
    {
        let bundle = try expectedBundle(input)
        guard let serverAPI else {
            logger.critical("a transaction id was posted but no App Store Server API key is configured (appStore.serverApi)")
            throw ReceiptError.storeMisconfigured(.appStore, storeStatus: nil)
        }
        let started = monotonic.now
        let (record, calls): (VerifiedFacts, Int)
        do {
            (record, calls) = try await serverAPI.customer(of: transactionID, bundleID: bundle)
        } catch let failure as ServerAPIFailure {
            let at = clock.now()
            let entry = VerificationLogEntry(
                appUserID: input.appUserID, environment: nil, appleStatus: nil, outcome: .failed(.serverAPI, failure.metricName),
                attempts: 0, latencyMs: (monotonic.now - started).milliseconds)
            try await database.write { db in try ReceiptStore(db).log(entry, at: at, unlessErasedSince: begun) }
            throw ReceiptError(failure, logger: logger)
        }
        if record.purchases.contains(where: { $0.bundleID != bundle }) {
            throw ReceiptError.bundleMismatch("The transaction belongs to another app.")
        }
        let log = VerificationLogEntry(
            appUserID: input.appUserID, environment: record.environment, appleStatus: nil, outcome: .serverAPI,
            attempts: calls, latencyMs: (monotonic.now - started).milliseconds)
        return try await store(
            Self.pricing(record, with: input.clientPrice), for: input.appUserID, possession: possession, begun: begun,
            log: log)
    }

    private func verifyReceipt(_ receiptData: String, _ input: Input, begun: Int64) async throws -> SubscriberSnapshot {
        let expectedBundle = try expectedBundle(input)
        let verification = await client.verify(receiptData: receiptData, excludeOldTransactions: input.excludeOldTransactions)
        let entry = Self.logEntry(verification, user: input.appUserID)
        let (response, environment): (VerifyReceiptResponse, StoreEnvironment)
        do {
            (response, environment) = try outcome(verification)
            guard response.receipt?.bundleID == expectedBundle else {
                throw ReceiptError.bundleMismatch("The receipt belongs to another app.", appleStatus: response.status.rawValue)
            }
        } catch {
            // Nothing to store: the verification log still records the attempt.
            let at = clock.now()
            try await database.write { db in try ReceiptStore(db).log(entry, at: at, unlessErasedSince: begun) }
            throw error
        }
        let record = AppleFacts.facts(of: response, environment: environment)
        let snapshot = try await store(
            Self.pricing(record, with: input.clientPrice), for: input.appUserID, begun: begun, log: entry)
        shadow?.start(record, appUserID: input.appUserID, bundleID: expectedBundle)
        return snapshot
    }

    /// StoreKit 2: verified offline like a V2 notification's transaction, with no call to Apple.
    private func verifySigned(_ signedTransaction: String, _ signedRenewal: String?, _ input: Input, begun: Int64) async throws
        -> SubscriberSnapshot
    {
        let started = monotonic.now
        let transaction: SignedTransaction
        var renewal: SignedRenewalInfo?
        do {
            transaction = try await verifier.transaction(signedTransaction)
            if let signedRenewal { renewal = try await verifier.renewalInfo(signedRenewal) }
        } catch {
            logger.notice("signed transaction refused", metadata: ["reason": "\(error.code)", "user": "\(input.appUserID)"])
            throw ReceiptError.signedData(error)
        }
        if let given = input.bundleID, given != transaction.bundleID {
            throw ReceiptError.bundleMismatch("The signed transaction belongs to another app.")
        }
        if let renewal, !renewal.originalTransactionID.isExactly(transaction.originalTransactionID) {
            throw ReceiptError.invalidRequest("`signed_renewal_info` is about another purchase than `signed_transaction`.")
        }
        let log = VerificationLogEntry(
            appUserID: input.appUserID,
            environment: transaction.environment.flatMap(StoreEnvironment.init(appleName:)),
            appleStatus: nil, outcome: .signedTransaction, attempts: 0, latencyMs: (monotonic.now - started).milliseconds)
        let record = AppleFacts.facts(
            transaction: transaction, renewal: renewal, statedAt: transaction.signedDate ?? renewal?.signedDate)
        return try await store(Self.pricing(record, with: input.clientPrice), for: input.appUserID, begun: begun, log: log)
    }

    /// Two hops to the database: the facts and the log row in one save (SQL only), then the
    /// document derived off the writer and its version and events recorded (see ``SubscriberState``).
    /// Users who lost a purchase to this one are brought up to date too.
    private func store(
        _ record: VerifiedFacts, for user: String, possession: Possession = .proven, begun: Int64, log: VerificationLogEntry
    ) async throws -> SubscriberSnapshot {
        let at = clock.now()
        var snapshot = try await state.answer(for: user, database: database, now: at) { [policy, state] db in
            try state.save(
                record, for: user, policy: policy, possession: possession, begun: begun, in: db, now: at, log: log)
        }
        snapshot.proven = PurchaseIdentifiers.of(record)
        return snapshot
    }

    /// What the user had while Apple is down: nothing stored changes.
    private func lastKnown(_ appUserID: String) async -> ReceiptError.LastKnown? {
        await state.lastKnown(appUserID, database: database, now: clock.now())
    }

    /// The valid answer, or the error its result maps to.
    private func outcome(_ v: VerifyReceiptClient.Verification) throws(ReceiptError) -> (
        VerifyReceiptResponse, StoreEnvironment
    ) {
        switch v.result {
        case .valid(let response, let environment):
            return (response, environment)
        case .invalidReceipt(let status):
            throw .invalidReceipt(appleStatus: status.rawValue)
        case .misconfigured(let status), .unexpected(let status):
            logger.critical(
                "Apple refused receiptd's request: check appStore.sharedSecret and the verifyReceipt URLs",
                metadata: ["apple_status": "\(status.rawValue)"])
            throw .storeMisconfigured(.appStore, storeStatus: status.rawValue)
        case .unavailable(let status, let reason):
            logger.warning("App Store unavailable", metadata: ["reason": "\(reason)", "attempts": "\(v.attempts)"])
            let seconds = v.retryAfter?.secondsRoundedUp
            throw .storeUnavailable(
                .appStore, storeStatus: status?.rawValue, retryAfterSeconds: max(1, seconds ?? 30), lastKnown: nil)
        }
    }

    /// One verification-log row: never the receipt or the secret.
    static func logEntry(_ v: VerifyReceiptClient.Verification, user: String) -> VerificationLogEntry {
        let (outcome, status): (VerificationOutcome, Int?) =
            switch v.result {
            case .valid(let r, _): (.valid, r.status.rawValue)
            case .invalidReceipt(let s): (.invalidReceipt, s.rawValue)
            case .misconfigured(let s): (.misconfigured, s.rawValue)
            case .unexpected(let s): (.unexpected, s.rawValue)
            case .unavailable(let s, _): (.unavailable, s?.rawValue)
            }
        return VerificationLogEntry(
            appUserID: user, environment: v.environment, appleStatus: status, outcome: outcome,
            attempts: v.attempts, latencyMs: v.duration.milliseconds)
    }
}

extension Duration {
    /// Whole seconds, a started second counting as one (for `Retry-After` and the like).
    package var secondsRoundedUp: Int { Int(components.seconds) + (components.attoseconds > 0 ? 1 : 0) }
}
