import Testing

@testable import Notifications

@Suite("Notification outcomes")
struct NotificationOutcomeTests {
    /// The words stored with every notification and answered as `outcome`: renaming a case must
    /// not change them (Docs/api.md, the notifications tables).
    @Test func theStoredWordsStayAsTheyWere() {
        #expect(
            NotificationOutcome.allCases.map(\.rawValue) == [
                "received", "applied", "unchanged", "recorded", "pending_owner", "owner_conflict", "consent_rescinded",
                "unknown_token", "test", "ignored", "duplicate", "unknown",
            ])
        #expect(NotificationOutcome(stored: "pending_owner") == .pendingOwner)
        #expect(NotificationOutcome(stored: "no such word") == .unknown && NotificationOutcome(stored: nil) == .unknown)
    }
}
