import ReceiptCore

/// What became of a store's notification: one vocabulary for Apple's and Google's, stored with
/// the notification (`notifications.outcome`, `play_notifications.outcome`), answered as
/// `outcome` and counted by it.
package enum NotificationOutcome: String, Sendable, Equatable, CaseIterable {
    /// Stored, not yet applied: a row's state inside the save that applies it.
    case received
    /// Its facts changed what their holder has.
    case applied
    /// Its facts were known already.
    case unchanged
    /// Nothing in it to store for anyone (a test, a summary, a type about no purchase): kept.
    case recorded
    /// Nobody holds its purchase yet: its facts wait for the first holder.
    case pendingOwner = "pending_owner"
    /// The ownership policy keeps its purchases split between people: kept, held by nobody.
    case ownerConflict = "owner_conflict"
    /// Apple's `RESCIND_CONSENT`: the customer's consumption requests go unanswered from now on.
    case consentRescinded = "consent_rescinded"
    /// Google knows no purchase for its token.
    case unknownToken = "unknown_token"
    /// Play Console's test message.
    case test
    /// A kind of Google message receiptd does not act on.
    case ignored
    /// Delivered before: its first delivery's outcome stands.
    case duplicate
    /// A stored outcome this vocabulary does not name.
    case unknown

    /// A stored outcome read back.
    init(stored: String?) { self = stored.flatMap(Self.init(rawValue:)) ?? .unknown }
}
