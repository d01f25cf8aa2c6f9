import Entitlements
import Identifiers
import Storage

/// Keeps a subscriber's stored version and events in step with their facts. The document itself
/// is always derived at read time (state depends on "now"); what is stored is its fingerprint,
/// the version that counts its changes, and the events derived from the facts.
package struct SubscriberState: Sendable {
    let settings: EntitlementSettings

    package init(settings: EntitlementSettings) { self.settings = settings }

    /// What ``refresh(_:facts:document:in:now:factsChanged:)`` did.
    struct Refresh: Sendable {
        var version: Int64
        var versionBumped: Bool
        var events: EventStore.Changes
    }

    /// `subscriber`'s document at `now`; `facts` are their `pinnedFacts`, computed once by the caller.
    func document(_ subscriber: SubscriberRecord, facts: Facts, now: Int64) -> SubscriberDocument {
        SubscriberDocument(appUserID: subscriber.appUserID, facts: facts, settings: settings, now: now)
    }

    /// Whether `document` differs from what the stored version describes.
    func isStale(_ subscriber: SubscriberRecord, _ document: SubscriberDocument) -> Bool {
        subscriber.stateHash != document.fingerprint
    }

    /// In the caller's write transaction: when the document changed, bumps the version and
    /// re-derives the events; when only the facts changed (say, an old renewal learned late),
    /// re-derives the events. Deriving the same facts again changes nothing.
    /// `facts` are `subscriber.pinnedFacts`, and `document` was derived from them.
    func refresh(
        _ subscriber: SubscriberRecord, facts: Facts, document: SubscriberDocument, in db: Database, now: Int64,
        factsChanged: Bool
    ) throws -> Refresh {
        let stale = isStale(subscriber, document)
        guard stale || factsChanged else { return Refresh(version: subscriber.version, versionBumped: false, events: .init()) }
        let events = History.events(
            facts, appUserID: subscriber.appUserID, catalog: settings.catalog, policy: settings.policy, asOf: now)
        let changes = try EventStore(db).replace(
            WireMapping.eventRecords(events), for: subscriber.appUserID, originals: subscriber.originals, now: now)
        guard stale else { return Refresh(version: subscriber.version, versionBumped: false, events: changes) }
        let version =
            try ReceiptStore(db).setState(
                subscriber.appUserID, hash: document.fingerprint, expected: subscriber.stateHash, now: now) ?? subscriber.version
        return Refresh(version: version, versionBumped: version != subscriber.version, events: changes)
    }

    /// What ``save(_:for:policy:in:now:log:)`` did.
    enum Saved: Sendable {
        /// Under `OwnershipPolicy.keep` (or `transferIfInactive` while it entitles them), another
        /// user holds one of the purchases; nothing but `log` was written.
        case inUse(heldBy: String)
        /// Stored: the document as of `now`, its version, and how many fact rows were new or changed.
        case document(SubscriberDocument, version: Int64, changes: Int)
    }

    /// In one write transaction (the caller's, when it has one): stores verified facts for
    /// `appUserID` (a receipt, a notification, a signed transaction: all alike) unless `policy`
    /// refuses to move a purchase another user holds, attaches the notifications that were waiting
    /// for a holder of those purchases, then brings the version and events up to date. `log`, when
    /// given, is written in the same transaction, even when the save is refused.
    func save(
        _ facts: VerifiedFacts, for appUserID: String, policy: OwnershipPolicy, in db: Database, now: Int64,
        log: VerificationLogEntry? = nil
    ) throws -> Saved {
        try db.transaction { () throws -> Saved in
            let store = ReceiptStore(db)
            if let log { try store.log(log, at: now) }
            switch policy {
            case .transfer: break
            case .keep:
                for original in facts.originals {
                    if let holder = try store.owner(of: original), !holder.isExactly(appUserID) { return .inUse(heldBy: holder) }
                }
            case .transferIfInactive:
                if let holder = try activeHolder(of: facts, other: appUserID, in: db, now: now) { return .inUse(heldBy: holder) }
            }
            let saved = try store.save(facts, for: appUserID, now: now)
            for original in saved.acquired { try NotificationStore(db).attachPending(original, to: appUserID) }
            guard let subscriber = try store.subscriber(appUserID) else { throw ReceiptError.internalFault }
            let current = subscriber.pinnedFacts
            let document = document(subscriber, facts: current, now: now)
            let refresh = try refresh(
                subscriber, facts: current, document: document, in: db, now: now, factsChanged: saved.changes > 0)
            return .document(document, version: refresh.version, changes: saved.changes)
        }
    }

    /// Under `transfer_if_inactive`: another user who holds one of `record`'s purchases and is
    /// entitled by it at `now`, judged on their stored facts updated with `record` (Apple's newest
    /// word: a refund it reveals frees the purchase). Writes nothing: the probe is rolled back.
    func activeHolder(of record: VerifiedFacts, other appUserID: String, in db: Database, now: Int64) throws -> String? {
        struct Probe: Error { let holder: String? }
        // Most posts are by the holder or of something nobody holds: no probe needed.
        var holders: [String] = []
        for original in record.originals {
            if let holder = try ReceiptStore(db).owner(of: original), !holder.isExactly(appUserID),
                !holders.contains(where: { $0.isExactly(holder) })
            {
                holders.append(holder)
            }
        }
        guard !holders.isEmpty else { return nil }
        do {
            try db.transaction {
                let store = ReceiptStore(db)
                _ = try store.saveUnowned(record, now: now)
                for holder in holders {
                    guard let subscriber = try store.subscriber(holder) else { continue }
                    let entitling = entitlingOriginals(subscriber, now: now)
                    if !entitling.isDisjoint(with: record.originals.map { Identifier($0) }) { throw Probe(holder: holder) }
                }
                throw Probe(holder: nil)
            }
        } catch let probe as Probe {
            return probe.holder
        }
        return nil
    }

    /// The original transactions that entitle `subscriber` to something at `now`.
    func entitlingOriginals(_ subscriber: SubscriberRecord, now: Int64) -> Set<Identifier> {
        let facts = subscriber.pinnedFacts
        var originals = Set(
            Derivation.subscriptions(facts, catalog: settings.catalog, policy: settings.policy, now: now)
                .filter(\.isEntitled).map { Identifier($0.originalTransactionID) })
        let entitled = Set(
            Derivation.nonSubscriptions(facts, catalog: settings.catalog, policy: settings.policy, now: now)
                .filter(\.isEntitled).map { Identifier($0.transactionID) })
        for p in facts.purchases where entitled.contains(Identifier(p.transactionID)) {
            originals.insert(Identifier(p.originalTransactionID))
        }
        return originals
    }

    /// A subscriber's document as read: its version, and the change log's last sequence in the
    /// snapshot it was read from (what ``SubscriberCache`` needs to keep it exactly).
    struct Current: Sendable {
        var document: SubscriberDocument
        var version: Int64
        var sequence: Int64
    }

    /// Reads a subscriber, bringing their version and events up to date first when time or
    /// configuration changed their document since it was stored. Nil when unknown.
    func current(_ appUserID: String, database: DatabaseQueue, now: Int64) async throws -> Current? {
        let read = try await database.read { db in
            try ReceiptStore(db).subscriber(appUserID).map { ($0, try ChangeLog(db).last()) }
        }
        guard let (subscriber, sequence) = read else { return nil }
        let document = document(subscriber, facts: subscriber.pinnedFacts, now: now)
        guard isStale(subscriber, document) else {
            return Current(document: document, version: subscriber.version, sequence: sequence)
        }
        // Rare (a state change since the last read): re-read and refresh in one write transaction.
        return try await database.write { [self] db -> Current? in
            guard let fresh = try ReceiptStore(db).subscriber(appUserID) else { return nil }
            let facts = fresh.pinnedFacts
            let document = self.document(fresh, facts: facts, now: now)
            let refresh = try self.refresh(fresh, facts: facts, document: document, in: db, now: now, factsChanged: false)
            return Current(document: document, version: refresh.version, sequence: try ChangeLog(db).last())
        }
    }
}
