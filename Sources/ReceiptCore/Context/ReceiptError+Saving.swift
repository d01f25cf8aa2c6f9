package import Logging
import Storage

extension ReceiptError {
    /// What a failure on the road to storage is told as: a refusal as it is, an erasure since the
    /// work began as `erased_meanwhile`, anything else logged (what was being `done`) and internal.
    package init(saving error: any Error, logger: Logger, _ done: @autoclosure () -> String) {
        switch error {
        case let refusal as ReceiptError: self = refusal
        case is ErasedIDs.ErasedMeanwhile: self = .erasedMeanwhile
        default:
            logger.error("\(done()) failed", metadata: ["error": "\(error)"])
            self = .internalFault
        }
    }
}
