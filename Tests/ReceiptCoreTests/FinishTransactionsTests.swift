import AppStoreServerAPI
import Testing

@testable import ReceiptCore

/// What a Finish Transaction failure means for the call: Apple not knowing the transaction is for
/// good; anything else is tried again after the backoff.
@Suite("Finish Transaction")
struct FinishTransactionsTests {
    @Test func failuresAreRetriedWithBackoffUnlessAppleCanNeverTakeThem() {
        let settings = CallQueueSettings(retryBaseMs: 30_000, retryMaxMs: 3_600_000)
        #expect(FinishTransactions.outcome(of: nil, attempts: 0, now: 10, settings: settings) == .finished)
        for failure in [ServerAPIFailure.notFound, .invalidTransactionID] {
            guard case .refused = FinishTransactions.outcome(of: failure, attempts: 0, now: 10, settings: settings) else {
                Issue.record("\(failure) retried")
                continue
            }
        }
        let down = ServerAPIFailure.unavailable(reason: "503", retryAfter: nil)
        #expect(
            FinishTransactions.outcome(of: down, attempts: 0, now: 10, settings: settings) == .retry(at: 30_010, down.description)
        )
        #expect(
            FinishTransactions.outcome(of: .unauthorized(status: 401), attempts: 3, now: 10, settings: settings)
                == .retry(at: 240_010, ServerAPIFailure.unauthorized(status: 401).description))
    }
}
