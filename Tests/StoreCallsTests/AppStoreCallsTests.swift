import AppStore
import Testing
import Workers

@testable import StoreCalls

/// What a failed App Store call means: Apple not knowing the transaction (or refusing the request
/// as malformed) is for good; anything else is tried again after the backoff.
@Suite("App Store calls")
struct AppStoreCallsTests {
    @Test func failuresAreRetriedWithBackoffUnlessAppleCanNeverTakeThem() {
        let settings = LeasedQueueSettings(retryBaseMs: 30_000, retryMaxMs: 3_600_000)
        #expect(AppStoreCalls.outcome(of: nil, attempts: 0, now: 10, settings: settings) == .done)
        for failure in [ServerAPIFailure.notFound, .invalidTransactionID, .rejected(status: 400, error: nil)] {
            guard case .refused = AppStoreCalls.outcome(of: failure, attempts: 0, now: 10, settings: settings) else {
                Issue.record("\(failure) retried")
                continue
            }
        }
        let down = ServerAPIFailure.unavailable(reason: "503", retryAfter: nil)
        #expect(AppStoreCalls.outcome(of: down, attempts: 0, now: 10, settings: settings) == .retry(at: 30_010, down.description))
        #expect(
            AppStoreCalls.outcome(of: .unauthorized(status: 401), attempts: 3, now: 10, settings: settings)
                == .retry(at: 240_010, ServerAPIFailure.unauthorized(status: 401).description))
    }
}
