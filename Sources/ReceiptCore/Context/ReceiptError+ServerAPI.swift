package import AppStore
import Entitlements
package import Logging

extension ReceiptError {
    /// The Server API's failures as the API's stable errors, logged as each deserves.
    package init(_ failure: ServerAPIFailure, logger: Logger) {
        switch failure {
        case .notFound, .invalidTransactionID: self = .invalidTransactionID
        // Refused before anything was sent: the asker's input, never the operator's configuration.
        case .invalidIdentifier(.transaction): self = .invalidTransactionID
        case .invalidIdentifier(.order): self = .orderNotFound
        case .invalidIdentifier(let kind): self = .invalidRequest("That is not an Apple \(kind.rawValue).")
        case .unauthorized(0):
            // Nothing was sent: the app's App Store Connect account has no In-App Purchase key.
            self = .notConfigured(.serverAPI)
        case .unauthorized(let status):
            logger.critical(
                "Apple refused receiptd's App Store Server API token: check the In-App Purchase key, appStore.serverApi.keyId and issuerId",
                metadata: ["http_status": "\(status)"])
            self = .storeMisconfigured(.appStore, storeStatus: nil)
        case .rejected(let status, let error):
            logger.error(
                "Apple refused an App Store Server API request",
                metadata: ["http_status": "\(status)", "error_code": "\(error?.code ?? 0)"])
            self = .storeMisconfigured(.appStore, storeStatus: nil)
        case .unavailable(let reason, let retryAfter):
            logger.warning("App Store Server API unavailable", metadata: ["reason": "\(reason)"])
            self = .storeUnavailable(
                .appStore, storeStatus: nil, retryAfterSeconds: max(1, retryAfter?.secondsRoundedUp ?? 30), lastKnown: nil)
        case .badAnswer(let reason):
            logger.error("App Store Server API answer unreadable", metadata: ["reason": "\(reason)"])
            self = .storeUnavailable(.appStore, storeStatus: nil, retryAfterSeconds: 30, lastKnown: nil)
        case .signedData(let refusal):
            // Apple's own answer did not verify: never stored, and the user keeps what they had.
            logger.critical(
                "an App Store Server API answer failed signature verification", metadata: ["reason": "\(refusal.code)"])
            self = .storeUnavailable(.appStore, storeStatus: nil, retryAfterSeconds: 30, lastKnown: nil)
        }
    }
}
