import Storage

extension MassExtensions {
    /// A mass renewal-date extension and how far it has come, as the API shows it.
    package struct Progress: Sendable, Equatable {
        package enum Status: String, Sendable, CaseIterable {
            case submitting
            case inProgress = "in_progress"
            case refreshing
            case complete
            case refused
        }

        package var requestID: String
        package var bundleID: String
        package var environment: String
        package var productID: String
        /// Empty: every storefront.
        package var storefronts: [String]
        package var days: Int
        package var reason: String
        /// The asking key's fingerprint.
        package var requestedBy: String
        package var requestedAt: Int64
        package var status: Status
        package var submittedAt: Int64?
        /// When Apple said it had reached every subscription, and how many it extended or not.
        package var appleCompletedAt: Int64?
        package var succeededCount: Int64?
        package var failedCount: Int64?
        /// Stored subscriptions whose new expiry was fetched and stored.
        package var refreshed: Int
        package var finishedAt: Int64?
        /// When its next step is due.
        package var dueAt: Int64?
        package var attempts: Int
        package var lastError: String?
    }
}

extension MassExtensions.Progress {
    init(_ r: MassExtensionRecord) {
        self.init(
            requestID: r.requestID, bundleID: r.bundleID, environment: r.environment, productID: r.productID,
            storefronts: r.storefronts, days: r.days, reason: r.reason, requestedBy: r.requestedBy, requestedAt: r.requestedAt,
            status: Status(rawValue: r.status.rawValue)!, submittedAt: r.submittedAt, appleCompletedAt: r.appleCompletedAt,
            succeededCount: r.succeededCount, failedCount: r.failedCount, refreshed: r.refreshed, finishedAt: r.finishedAt,
            dueAt: r.dueAt, attempts: r.attempts, lastError: r.lastError)
    }
}
