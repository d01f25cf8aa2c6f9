/// Who may hold a purchase another user already holds (`ownership.policy`). Decided by
/// ``SubscriberState/save(_:for:policy:in:now:log:)`` before anything is written.
package enum OwnershipPolicy: String, Sendable, CaseIterable {
    /// The newest poster gets it; the transfer is recorded.
    case transfer
    /// The first holder keeps it; a second user is refused.
    case keep
    /// The newest poster gets it only when it gives its holder nothing now (expired, refunded,
    /// revoked); while it entitles them, a second user is refused as under `keep`.
    case transferIfInactive = "transfer_if_inactive"
}
