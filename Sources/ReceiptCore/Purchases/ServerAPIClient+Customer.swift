import AppStore
import Entitlements
import Storage

extension ServerAPIClient {
    /// A customer as the App Store Server API states them, by any of their transaction ids: every
    /// page of Get Transaction History and Get All Subscription Statuses, asked concurrently, as
    /// facts in the history's environment; `calls` is the requests made (pages and statuses).
    /// Throws ``ServerAPIFailure``.
    func customer(of transactionID: String, bundleID: String) async throws -> (facts: VerifiedFacts, calls: Int) {
        async let statuses = subscriptionStatuses(of: transactionID, bundleID: bundleID)
        let history = try await transactionHistory(of: transactionID, bundleID: bundleID)
        var facts = AppleFacts.facts(of: try await statuses, history: history.transactions)
        facts.environment = history.environment
        return (facts, history.pages + 1)
    }
}
