package import Entitlements
package import Storage

/// How one verification ended, as the verification log (`verifications.outcome`), the refresher's
/// queue and the statistics name it: the source that answered, or why none did. One vocabulary,
/// the words unchanged (`VerificationOutcomeTests` pins them).
package struct VerificationOutcome: Sendable, Hashable, CustomStringConvertible {
    package let rawValue: String
    private init(_ rawValue: String) { self.rawValue = rawValue }
    package var description: String { rawValue }

    // verifyReceipt (Docs/apple-protocols.md §1): its answer, by the client's verdict.
    package static let valid = Self("valid")
    package static let invalidReceipt = Self("invalid_receipt")
    package static let misconfigured = Self("misconfigured")
    package static let unexpected = Self("unexpected")
    package static let unavailable = Self("unavailable")

    /// The App Store Server API answered.
    package static let serverAPI = Self("server_api")
    /// A StoreKit 2 signed transaction, verified here: no call to Apple.
    package static let signedTransaction = Self("signed_transaction")
    /// An app receipt naming no transaction: nothing to ask.
    package static let noTransactions = Self("no_transactions")
    /// The Play Developer API answered.
    package static let googlePlay = Self("google_play")
    /// Google refused receiptd's service account before the call (the refresher).
    package static let googlePlayRefused = Self("google_play_refused")

    /// A call to `source` that failed, by the failure's metric name: `server_api_unavailable`.
    package static func failed(_ source: VerificationOutcome, _ reason: String) -> Self { Self(source.rawValue + "_" + reason) }

    /// A store plugged in (``PurchaseStore``) answered: its name.
    package static func stated(by store: Store) -> Self { Self(store.rawValue) }

    /// A store plugged in refused or could not answer: the refusal's code.
    package static func refused(_ error: ReceiptError) -> Self { Self(error.code) }
}

extension VerificationLogEntry {
    /// A log entry whose outcome is one of ``VerificationOutcome``'s words.
    package init(
        appUserID: String?, environment: StoreEnvironment?, appleStatus: Int?, outcome: VerificationOutcome, attempts: Int,
        latencyMs: Int64
    ) {
        self.init(
            appUserID: appUserID, environment: environment, appleStatus: appleStatus, outcome: outcome.rawValue,
            attempts: attempts, latencyMs: latencyMs)
    }
}
