import Entitlements
import Storage

/// Keeps a subscriber's stored version and events in step with their facts. The document itself
/// is always derived at read time (state depends on "now"); what is stored is its fingerprint,
/// the version that counts its changes, and the events derived from the facts.
struct SubscriberState: Sendable {
    let settings: EntitlementSettings

    /// What ``refresh(_:document:in:now:factsChanged:)`` did.
    struct Refresh: Sendable {
        var version: Int64
        var versionBumped: Bool
        var events: EventStore.Changes
    }

    func document(_ subscriber: SubscriberRecord, now: Int64) -> SubscriberDocument {
        SubscriberDocument(subscriber, settings: settings, now: now)
    }

    /// Whether `document` differs from what the stored version describes.
    func isStale(_ subscriber: SubscriberRecord, _ document: SubscriberDocument) -> Bool {
        subscriber.stateHash != document.fingerprint
    }

    /// In the caller's write transaction: when the document changed, bumps the version and
    /// re-derives the events; when only the facts changed (say, an old renewal learned late),
    /// re-derives the events. Deriving the same facts again changes nothing.
    func refresh(
        _ subscriber: SubscriberRecord, document: SubscriberDocument, in db: Database, now: Int64, factsChanged: Bool
    ) throws -> Refresh {
        let stale = isStale(subscriber, document)
        guard stale || factsChanged else { return Refresh(version: subscriber.version, versionBumped: false, events: .init()) }
        let events = History.events(
            RecordMapping.facts(subscriber), appUserID: subscriber.appUserID, catalog: settings.catalog,
            policy: settings.policy, asOf: now)
        let changes = try EventStore(db).replace(
            RecordMapping.eventRecords(events), for: subscriber.appUserID, originals: subscriber.originals, now: now)
        guard stale else { return Refresh(version: subscriber.version, versionBumped: false, events: changes) }
        let version =
            try ReceiptStore(db).setState(
                subscriber.appUserID, hash: document.fingerprint, expected: subscriber.stateHash, now: now) ?? subscriber.version
        return Refresh(version: version, versionBumped: version != subscriber.version, events: changes)
    }

    /// What ``save(_:for:policy:in:now:log:)`` did.
    enum Saved: Sendable {
        /// Under `OwnershipPolicy.keep`, another user holds one of the purchases; nothing was written.
        case inUse(heldBy: String)
        /// Stored: the document as of `now`, its version, and how many fact rows were new or changed.
        case document(SubscriberDocument, version: Int64, changes: Int)
    }

    /// In the caller's write transaction: stores verified facts for `appUserID` (a receipt, a
    /// notification, a signed transaction: all alike), then brings their version and events up to date.
    func save(
        _ record: VerifiedReceiptRecord, for appUserID: String, policy: OwnershipPolicy, in db: Database, now: Int64,
        log: VerificationLogEntry? = nil
    ) throws -> Saved {
        let store = ReceiptStore(db)
        let changes: Int
        switch try store.save(record, for: appUserID, policy: policy, now: now, log: log) {
        case .receiptInUse(let holder): return .inUse(heldBy: holder)
        case .saved(let count): changes = count
        }
        guard let subscriber = try store.subscriber(appUserID) else { throw APIError.serverFault }
        let document = document(subscriber, now: now)
        let refresh = try refresh(subscriber, document: document, in: db, now: now, factsChanged: changes > 0)
        return .document(document, version: refresh.version, changes: changes)
    }

    /// Reads a subscriber, bringing their version and events up to date first when time or
    /// configuration changed their document since it was stored. Nil when unknown.
    func current(_ appUserID: String, database: DatabaseQueue, now: Int64) async throws -> (SubscriberDocument, Int64)? {
        guard let subscriber = try await database.run({ db in try ReceiptStore(db).subscriber(appUserID) }) else { return nil }
        let document = document(subscriber, now: now)
        guard isStale(subscriber, document) else { return (document, subscriber.version) }
        // Rare (a state change since the last read): re-read and refresh in one write transaction.
        return try await database.run { [self] db in
            try db.transaction { () throws -> (SubscriberDocument, Int64)? in
                guard let fresh = try ReceiptStore(db).subscriber(appUserID) else { return nil }
                let document = self.document(fresh, now: now)
                let refresh = try self.refresh(fresh, document: document, in: db, now: now, factsChanged: false)
                return (document, refresh.version)
            }
        }
    }
}
