import AppStore
import Clocks
import Entitlements
import FoundationEssentials
import Logging
import SignedData
import Storage

/// Verify a purchase for an app user and store what it proves: an app receipt through Apple's
/// verifyReceipt, or StoreKit 2's signed transaction verified here. The answer is the user's
/// document; a refusal is a ``ReceiptError``.
package struct VerifyPurchase: Sendable {
    /// What the app sends.
    package struct Input: Sendable, Equatable {
        package var appUserID: String
        package var proof: Proof
        /// The app it is for; may be omitted when one app is configured.
        package var bundleID: String?
        package var excludeOldTransactions: Bool

        package init(appUserID: String, proof: Proof, bundleID: String? = nil, excludeOldTransactions: Bool = false) {
            self.appUserID = appUserID
            self.proof = proof
            self.bundleID = bundleID
            self.excludeOldTransactions = excludeOldTransactions
        }
    }

    /// The proof of purchase.
    package enum Proof: Sendable, Equatable {
        /// An app receipt (base64), verified by Apple's verifyReceipt.
        case receipt(String)
        /// StoreKit 2's JWS (and optionally the renewal info's), verified here.
        case signed(transaction: String, renewal: String?)
    }

    let client: VerifyReceiptClient
    let verifier: SignedDataVerifier
    let database: DatabaseQueue
    let bundleIDs: [String]
    let state: SubscriberState
    let policy: OwnershipPolicy
    let logger: Logger
    let clock: WallClock
    let monotonic: any MonotonicClock

    package init(
        client: VerifyReceiptClient, verifier: SignedDataVerifier, database: DatabaseQueue, bundleIDs: [String],
        state: SubscriberState, policy: OwnershipPolicy, logger: Logger, clock: WallClock,
        monotonic: any MonotonicClock = SystemMonotonicClock()
    ) {
        self.monotonic = monotonic
        self.client = client
        self.verifier = verifier
        self.database = database
        self.bundleIDs = bundleIDs
        self.state = state
        self.policy = policy
        self.logger = logger
        self.clock = clock
    }

    /// Holds the input to ``FieldRules``, whoever built it (the HTTP edge checks the same first).
    package static func validate(_ input: Input) throws(ReceiptError) {
        _ = try FieldRules.appUserID(input.appUserID)
        switch input.proof {
        case .receipt(let receipt): try FieldRules.receipt(receipt)
        case .signed(let transaction, let renewal):
            try FieldRules.jws(transaction, field: "signed_transaction")
            if let renewal { try FieldRules.jws(renewal, field: "signed_renewal_info") }
        }
        if let bundleID = input.bundleID { try FieldRules.bundleID(bundleID) }
    }

    package func callAsFunction(_ input: Input) async throws(ReceiptError) -> SubscriberSnapshot {
        try Self.validate(input)
        do {
            switch input.proof {
            case .receipt(let receipt): return try await verifyReceipt(receipt, input)
            case .signed(let transaction, let renewal): return try await verifySigned(transaction, renewal, input)
            }
        } catch let error as ReceiptError {
            guard case .appStoreUnavailable(let status, let retry, nil) = error else { throw error }
            throw .appStoreUnavailable(
                appleStatus: status, retryAfterSeconds: retry, lastKnown: await lastKnown(input.appUserID))
        } catch {
            logger.error("verifying a purchase failed", metadata: ["error": "\(error)"])
            throw .internalFault
        }
    }

    private func verifyReceipt(_ receiptData: String, _ input: Input) async throws -> SubscriberSnapshot {
        let expectedBundle: String
        if let given = input.bundleID {
            guard bundleIDs.contains(given) else { throw ReceiptError.bundleMismatch("`bundle_id` is not a configured app.") }
            expectedBundle = given
        } else {
            guard bundleIDs.count == 1 else {
                throw ReceiptError.invalidRequest("`bundle_id` is required: several apps are configured.")
            }
            expectedBundle = bundleIDs[0]
        }
        let verification = await client.verify(receiptData: receiptData, excludeOldTransactions: input.excludeOldTransactions)
        let entry = Self.logEntry(verification, user: input.appUserID)
        let (response, environment): (VerifyReceiptResponse, AppStoreEnvironment)
        do {
            (response, environment) = try outcome(verification)
            guard response.receipt?.bundleID == expectedBundle else {
                throw ReceiptError.bundleMismatch("The receipt belongs to another app.", appleStatus: response.status.rawValue)
            }
        } catch {
            // Nothing to store: the verification log still records the attempt.
            let at = clock.now()
            try await database.write { db in try ReceiptStore(db).log(entry, at: at) }
            throw error
        }
        let record = WireMapping.facts(of: response, environment: environment)
        return try await store(record, for: input.appUserID, log: entry)
    }

    /// StoreKit 2: verified offline like a V2 notification's transaction, with no call to Apple.
    private func verifySigned(_ signedTransaction: String, _ signedRenewal: String?, _ input: Input) async throws
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
            environment: transaction.environment.flatMap(AppStoreEnvironment.init(appleName:))?.rawValue,
            appleStatus: nil, outcome: "signed_transaction", attempts: 0, latencyMs: (monotonic.now - started).milliseconds)
        let record = WireMapping.facts(
            transaction: transaction, renewal: renewal, statedAt: transaction.signedDate ?? renewal?.signedDate)
        return try await store(record, for: input.appUserID, log: log)
    }

    /// Two hops to the database: the facts and the log row in one save (SQL only), then the
    /// document derived off the writer and its version and events recorded (see ``SubscriberState``).
    /// Users who lost a purchase to this one are brought up to date too.
    private func store(_ record: VerifiedFacts, for user: String, log: VerificationLogEntry) async throws
        -> SubscriberSnapshot
    {
        let at = clock.now()
        let stored = try await database.write { [policy, state] db in
            try state.store(record, for: user, policy: policy, in: db, now: at, log: log)
        }
        guard case .stored(_, let changed) = stored else { throw ReceiptError.receiptInUse }
        try await state.settle(changed.filter { !$0.isExactly(user) }, database: database, now: at)
        guard let current = try await state.current(user, database: database, now: at) else { throw ReceiptError.internalFault }
        return SubscriberSnapshot(document: current.document, version: current.version, now: at)
    }

    /// What the user had while Apple is down: nothing stored changes.
    private func lastKnown(_ appUserID: String) async -> ReceiptError.LastKnown? {
        let at = clock.now()
        guard let read = try? await state.current(appUserID, database: database, now: at) else { return nil }
        let verifiedAt = (try? await database.read { db in try ReceiptStore(db).lastVerifiedAt(appUserID) }) ?? nil
        return .init(
            snapshot: SubscriberSnapshot(document: read.document, version: read.version, now: at), verifiedAt: verifiedAt)
    }

    /// The valid answer, or the error its result maps to.
    private func outcome(_ v: VerifyReceiptClient.Verification) throws(ReceiptError) -> (
        VerifyReceiptResponse, AppStoreEnvironment
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
            throw .appStoreMisconfigured(appleStatus: status.rawValue)
        case .unavailable(let status, let reason):
            logger.warning("App Store unavailable", metadata: ["reason": "\(reason)", "attempts": "\(v.attempts)"])
            let seconds = v.retryAfter?.secondsRoundedUp
            throw .appStoreUnavailable(appleStatus: status?.rawValue, retryAfterSeconds: max(1, seconds ?? 30), lastKnown: nil)
        }
    }

    /// One verification-log row: never the receipt or the secret.
    static func logEntry(_ v: VerifyReceiptClient.Verification, user: String) -> VerificationLogEntry {
        let (outcome, status): (String, Int?) =
            switch v.result {
            case .valid(let r, _): ("valid", r.status.rawValue)
            case .invalidReceipt(let s): ("invalid_receipt", s.rawValue)
            case .misconfigured(let s): ("misconfigured", s.rawValue)
            case .unexpected(let s): ("unexpected", s.rawValue)
            case .unavailable(let s, _): ("unavailable", s?.rawValue)
            }
        return VerificationLogEntry(
            appUserID: user, environment: v.environment.rawValue, appleStatus: status, outcome: outcome,
            attempts: v.attempts, latencyMs: v.duration.milliseconds)
    }
}

extension Duration {
    /// Whole seconds, a started second counting as one (for `Retry-After` and the like).
    package var secondsRoundedUp: Int { Int(components.seconds) + (components.attoseconds > 0 ? 1 : 0) }
}
