import Storage

extension WebhookOperations {
    /// A webhook delivery as ops see it (``WebhookOperations/deliveries(status:endpoint:appUserID:limit:before:)``).
    package struct Delivery: Sendable, Equatable {
        package enum Status: String, Sendable, CaseIterable {
            case pending, delivered, failed
        }

        package var id: Int64
        package var messageID: String
        package var endpoint: String
        package var appUserID: String
        package var status: Status
        /// When it is next tried (while claimed: when the claim runs out); nil while it waits
        /// behind an earlier delivery of the same subscriber, or once ended.
        package var dueAt: Int64?
        /// Whether a process holds a claim on it.
        package var claimed: Bool
        package var attempts: Int
        package var firstAttemptAt: Int64?
        package var lastStatus: Int?
        package var lastError: String?
        package var lastAttemptAt: Int64?
        package var createdAt: Int64
        package var finishedAt: Int64?
        /// The message's event type and subscriber version.
        package var type: String
        package var version: Int64
    }
}

extension WebhookOperations.Delivery {
    init(_ d: WebhookDelivery) {
        self.init(
            id: d.id, messageID: d.messageID, endpoint: d.endpoint, appUserID: d.appUserID,
            status: Status(rawValue: d.status.rawValue)!, dueAt: d.dueAt, claimed: d.claimed, attempts: d.attempts,
            firstAttemptAt: d.firstAttemptAt, lastStatus: d.lastStatus, lastError: d.lastError, lastAttemptAt: d.lastAttemptAt,
            createdAt: d.createdAt, finishedAt: d.finishedAt, type: d.type, version: d.version)
    }
}
