package import DatabaseEngine
package import Entitlements
import Identifiers
package import Storage
package import Webhooks
package import Workers

/// Keeps a subscriber's stored version and events in step with their facts. The document is
/// derived from the facts at a time (state depends on "now"); what is stored is its fingerprint,
/// the version that counts its changes, the events derived from the facts, and the document
/// rendered with the instant until which it reads the same (``Storage/DocumentStore``).
///
/// Storing facts and deriving from them are two writes. ``store(_:for:policy:in:now:log:)`` is
/// SQL only, on the writer; ``current(_:database:now:)`` reads a snapshot on a reader, derives,
/// renders and fingerprints on the caller's task, then records the result with a compare-and-set
/// (``ReceiptStore/settle(_:hash:derivedFrom:version:now:)``), reading again when another write
/// came between. A crash between the two writes loses nothing: the facts are stored, and the
/// next read derives. On SQLite a POST's save does both in one transaction
/// (``settle(_:in:now:)``), deriving on the writer's thread: fewer statements.
package struct SubscriberState: Sendable {
    let settings: EntitlementSettings
    /// ``EntitlementSettings/fingerprint``, which a kept document must have been derived with.
    let settingsFingerprint: String
    /// Where the events' webhooks are queued; nil: webhooks are off.
    let outbox: WebhookOutbox?
    /// The calls a save queues for Apple (``AppStoreCalls``); nil: none.
    let appleCalls: AppleCalls?

    /// Which calls to Apple a save queues, and the worker's bell.
    package struct AppleCalls: Sendable {
        /// `appStore.finishConsumables`: each App Store consumable stored for an app user is finished.
        package var finishConsumables: Bool
        /// `appStore.setAppAccountTokens`: each App Store purchase a person holds carries their token.
        package var setAppAccountTokens: Bool
        package var doorbell: Doorbell
        /// A new person's appAccountToken (a random UUID, lowercase).
        package var makeToken: @Sendable () -> String

        package init(
            finishConsumables: Bool, setAppAccountTokens: Bool, doorbell: Doorbell,
            makeToken: @escaping @Sendable () -> String
        ) {
            self.finishConsumables = finishConsumables
            self.setAppAccountTokens = setAppAccountTokens
            self.doorbell = doorbell
            self.makeToken = makeToken
        }
    }

    package init(settings: EntitlementSettings, outbox: WebhookOutbox? = nil, appleCalls: AppleCalls? = nil) {
        self.settings = settings
        settingsFingerprint = settings.fingerprint
        self.outbox = outbox
        self.appleCalls = appleCalls
    }

    /// How often ``current(_:database:now:)`` reads again when its compare-and-set loses to
    /// another write before it gives up (each loss means another writer made progress).
    static let maxAttempts = 16

    /// `subscriber`'s document at `now`; `facts` are their `pinnedFacts`, computed once by the caller.
    func document(_ subscriber: SubscriberRecord, facts: Facts, now: Int64) -> SubscriberDocument {
        SubscriberDocument(appUserID: subscriber.appUserID, facts: facts, settings: settings, now: now)
    }

    /// Whether the stored version and events describe `document`, derived from `subscriber`: the
    /// fingerprint is the stored one, and the derivation has seen their newest facts.
    func isSettled(_ subscriber: SubscriberRecord, _ document: SubscriberDocument) -> Bool {
        subscriber.stateHash == document.fingerprint && subscriber.derivedRevision == subscriber.factsRevision
    }

    /// The events `facts` (a subscriber's `pinnedFacts`) come to as of `now`, as stored.
    func events(_ subscriber: SubscriberRecord, facts: Facts, now: Int64) -> [EventRecord] {
        FactRecords.eventRecords(
            History.events(facts, appUserID: subscriber.appUserID, catalog: settings.catalog, policy: settings.policy, asOf: now))
    }

    /// What ``record(_:document:events:in:now:)`` wrote.
    struct Recorded: Sendable {
        var version: Int64
        var events: EventStore.Changes
        /// Webhook deliveries queued for the new events.
        var deliveries: Int
    }

    /// In the caller's write transaction, SQL only: records `document` and `events`, derived from
    /// the snapshot `subscriber`, as their state (a new fingerprint bumps the version), and queues
    /// the new events' webhooks, if the snapshot is still current. Nil when another write changed
    /// their facts or version since: nothing is written.
    ///
    /// `storedEvents`: the events stored for them, read with the snapshot. The compare-and-set
    /// then goes unanswered with the rest (``ReceiptStore/settleUnanswered(_:hash:stateHash:derivedFrom:version:now:document:summaryUntil:)``),
    /// and when it loses, the transaction fails with ``StorageError/lostCompareAndSet`` instead.
    func record(
        _ subscriber: SubscriberRecord, document: SubscriberDocument, events: [EventRecord], in db: Database, now: Int64,
        storedEvents: [EventRecord]? = nil
    ) throws -> Recorded? {
        try db.transaction { () throws -> Recorded? in
            // Rendered with the version it will show: one more when its fingerprint is new (the
            // snapshot's fingerprint is the row's while its version is).
            let shows = subscriber.version + (subscriber.stateHash == document.fingerprint ? 0 : 1)
            let store = ReceiptStore(db)
            let (user, rendered, summaryUntil) = (
                subscriber.appUserID, rendering(document, version: shows), document.changesAt ?? .max
            )
            let version: Int64
            if storedEvents != nil {
                version = try store.settleUnanswered(
                    user, hash: document.fingerprint, stateHash: subscriber.stateHash, derivedFrom: subscriber.factsRevision,
                    version: subscriber.version, now: now, document: rendered, summaryUntil: summaryUntil)
            } else {
                // The stored events, which their replacement reads next, go with the settle.
                guard
                    let settled = try store.settle(
                        user, hash: document.fingerprint, derivedFrom: subscriber.factsRevision, version: subscriber.version,
                        now: now, document: rendered, summaryUntil: summaryUntil,
                        ahead: [try EventStore(db).storedEvents(for: user)])
                else { return nil }
                version = settled
            }
            try ProductStateStore(db).replace(document.productStates, for: user)  // good until: the settle's
            // The new events' ids are read back only for webhooks to name them.
            var added: [EventRecord] = []
            let changes = try EventStore(db).replace(
                events, for: user, originals: subscriber.originals, now: now,
                inserted: outbox?.endpoints.isEmpty == false ? { added.append($0) } : nil, read: storedEvents)
            let deliveries =
                try outbox?.enqueue(
                    added, of: subscriber, version: version, document: { document.body(version: version, now: now) }, in: db,
                    now: now) ?? 0
            return Recorded(version: version, events: changes, deliveries: deliveries)
        }
    }

    /// `document` rendered as version `version` shows it, to keep for the reads that take it
    /// whole (``Storage/DocumentStore``).
    func rendering(_ document: SubscriberDocument, version: Int64) -> DocumentStore.Rendering {
        let (head, tail) = document.template(version: version)
        return DocumentStore.Rendering(version: version, json: head + tail, cut: head.count, settings: settingsFingerprint)
    }

    /// Keeps `document` rendered, as version `version` derived at `now`, in the caller's
    /// transaction: for a row settled before documents were kept.
    func keep(_ document: SubscriberDocument, version: Int64, in db: Database, now: Int64) throws {
        try DocumentStore(db).keep(document.appUserID, rendering(document, version: version), derivedAt: now)
    }

    /// What ``store(_:for:policy:in:now:log:)`` did.
    package enum Stored: Sendable, Equatable {
        /// Under `OwnershipPolicy.keep` (or `transferIfInactive` while it entitles them), another
        /// user holds one of the purchases; nothing but `log` was written.
        case inUse(heldBy: String)
        /// A bare transaction id (``Possession/bareID``) names a purchase another user holds and
        /// whose `appAccountToken` does not name this one; nothing but `log` was written.
        case proofRequired(heldBy: String)
        /// Stored: how many fact rows were new or changed, and whose facts changed (the user
        /// first, then who lost a purchase to them). Their state is behind until read with
        /// ``current(_:database:now:)`` (``settle(_:database:now:)``).
        case stored(changes: Int, changed: [String])

        /// Whether it changed the facts of `user` (as spelt: ids are exact bytes).
        func changed(_ user: String) -> Bool {
            guard case .stored(_, let changed) = self else { return false }
            return changed.contains { $0.isExactly(user) }
        }
    }

    /// In one write transaction (the caller's, when it has one), SQL only: stores verified facts
    /// for `appUserID` (a receipt, a notification, a signed transaction: all alike) unless `policy`
    /// refuses to move a purchase another user holds, and attaches the notifications that were
    /// waiting for a holder of those purchases. `log`, when given, is written in the same
    /// transaction, even when the save is refused. An alias stores for the subscriber it names.
    /// `begun`: when the work that learnt `facts` began (before a store was asked); when the
    /// person was erased since, ``ErasedIDs/ErasedMeanwhile`` is thrown and nothing is written.
    package func store(
        _ facts: VerifiedFacts, for requestedID: String, policy: OwnershipPolicy, possession: Possession = .proven,
        begun: Int64? = nil, in db: Database, now: Int64, log: VerificationLogEntry? = nil
    ) throws -> Stored {
        try db.transaction { () throws -> Stored in
            let stored = try storeUnlogged(
                facts, for: requestedID, policy: policy, possession: possession, begun: begun, in: db, now: now)
            // Last, so that on PostgreSQL it goes with the commit, not in a round trip of its own
            // before the save's savepoint opens.
            if let log { try ReceiptStore(db).log(log, at: now) }
            return stored
        }
    }

    /// ``store(_:for:policy:possession:begun:in:now:log:)`` but for its log, in its transaction.
    private func storeUnlogged(
        _ facts: VerifiedFacts, for requestedID: String, policy: OwnershipPolicy, possession: Possession, begun: Int64?,
        in db: Database, now: Int64
    ) throws -> Stored {
        let store = ReceiptStore(db)
        try store.lock(facts, for: requestedID)  // before the policy reads who holds what
        // Whom the id names, whether it was erased since the work began, and who holds the
        // purchases (the policy's and the save's read): sent together, on PostgreSQL in one round
        // trip after the locks. Nothing here writes who holds them before the save reads it.
        let erasedRead = try begun.flatMap { try ErasedIDs(db).anyErasedRead([requestedID], since: $0) }
        let ownersRead = try store.ownersRead(of: facts.originals)
        try db.prefetch([try store.canonicalRead(requestedID)] + [erasedRead, ownersRead].compactMap(\.self))
        let appUserID = try store.canonical(requestedID)
        if !appUserID.isExactly(requestedID) { try store.lock(purchases: [], subscriber: appUserID) }
        // Erased since the work began (while a store was asked): nothing of theirs is written back.
        if let begun { try ErasedIDs(db).check([requestedID, appUserID], since: begun) }
        erasedRead?.reset()  // unread when the id is an alias: not for a later read
        // Read once, for the policy and the save: under the locks, nothing else moves them.
        let holders = try store.owners(of: facts.originals)
        if possession == .bareID, let holder = try heldElsewhere(facts, holders: holders, from: appUserID, in: db) {
            return .proofRequired(heldBy: holder)
        }
        switch policy {
        case .transfer: break
        case .keep:
            for holder in holders.compactMap(\.self) where !holder.isExactly(appUserID) {
                return .inUse(heldBy: holder)
            }
        case .transferIfInactive:
            if let holder = try activeHolder(of: facts, holders: holders, other: appUserID, in: db, now: now) {
                return .inUse(heldBy: holder)
            }
        }
        let saved = try store.save(facts, for: appUserID, holders: holders, now: now)
        for original in saved.acquired { try NotificationStore(db).attachPending(original, to: appUserID) }
        if let appleCalls,
            try queueCalls(facts, for: appUserID, transferred: saved.changed.count > 1, appleCalls, in: db, now: now) > 0
        {
            appleCalls.doorbell.ring()
        }
        return .stored(changes: saved.changes, changed: saved.changed)
    }

    /// In the save's transaction, the calls to Apple that storing `facts` for `appUserID` makes due
    /// (``AppStoreCalls``); how many are newly due. (The worker, rung before the commit, reads
    /// after it: on SQLite its claim queues behind this write; elsewhere it finds the calls at its
    /// next poll at worst.)
    ///
    /// - Finish Transaction for each App Store consumable not refunded, once per transaction.
    /// - Set App Account Token for each App Store purchase whose newest token does not name them
    ///   (``needsToken(current:personToken:names:transferred:)``), with their token.
    @discardableResult
    func queueCalls(
        _ facts: VerifiedFacts, for appUserID: String, transferred: Bool, _ calls: AppleCalls, in db: Database, now: Int64
    ) throws -> Int {
        let queue = AppStoreCallStore(db)
        var queued = 0
        let appStore = facts.purchases.filter {
            $0.fact.store == .appStore && $0.bundleID != nil
        }
        if calls.finishConsumables {
            for p in appStore where p.fact.cancellationDate == nil && settings.catalog.kind(of: p.fact) == .consumable {
                if try queue.enqueue(
                    .finishTransaction, subject: p.fact.transactionID, bundleID: p.bundleID!,
                    environment: p.fact.environment.rawValue,
                    now: now)
                {
                    queued += 1
                }
            }
        }
        guard calls.setAppAccountTokens, !appStore.isEmpty,
            let token = try queue.accountToken(of: appUserID, make: calls.makeToken)
        else { return queued }
        var seen: Set<Identifier> = []
        for p in appStore where seen.insert(Identifier(p.fact.originalTransactionID)).inserted {
            let original = p.fact.originalTransactionID
            let current = try queue.purchaseToken(original)
            let names = try current.map { try ReceiptStore(db).subscriber(namedByToken: $0) } ?? nil
            guard
                Self.needsToken(
                    current: current, personToken: token, names: names.map { $0.isExactly(appUserID) }, transferred: transferred)
            else { continue }
            if try queue.enqueue(
                .setAppAccountToken, subject: original, argument: token, bundleID: p.bundleID!,
                environment: p.fact.environment.rawValue,
                now: now)
            {
                queued += 1
            }
        }
        return queued
    }

    /// Whether Apple should be told a person's token for a purchase they hold whose newest
    /// transaction carries `current`: when it carries none; not when it is theirs (`personToken`)
    /// or names them (`names` true: their id, an alias, their token); when it names someone else
    /// (`names` false); and when it names nobody receiptd knows (`names` nil: the app's own
    /// token), only if the purchase just changed hands (`transferred`), since it is then the
    /// previous holder's.
    static func needsToken(current: String?, personToken: String, names: Bool?, transferred: Bool) -> Bool {
        guard let current else { return true }
        if current.lowercased() == personToken.lowercased() { return false }
        return switch names {
        case true?: false
        case false?: true
        case nil: transferred
        }
    }

    /// For a bare transaction id: another user who holds one of `facts`' purchases, unless Apple's
    /// signed `appAccountToken` on its newest transaction names `appUserID` (their id, an alias, or
    /// the token receiptd made for them). Nil when the poster may have them all.
    func heldElsewhere(_ facts: VerifiedFacts, holders: [String?], from appUserID: String, in db: Database) throws -> String? {
        let store = ReceiptStore(db)
        for (original, holder) in zip(facts.originals, holders) {
            guard let holder, !holder.isExactly(appUserID) else { continue }
            let newest = facts.purchases.filter { $0.fact.originalTransactionID.isExactly(original) }
                .max { ($0.fact.purchaseDate ?? 0, $0.fact.transactionID) < ($1.fact.purchaseDate ?? 0, $1.fact.transactionID) }
            if let token = newest?.fact.appAccountToken, let named = try store.subscriber(namedByToken: token),
                try store.canonical(named).isExactly(appUserID)
            {
                continue
            }
            return holder
        }
        return nil
    }

    /// Brings the state of every user in `appUserIDs` up to date (after ``store(_:for:policy:in:now:log:)``
    /// changed their facts).
    func settle(_ appUserIDs: [String], database: DatabaseQueue, now: Int64) async throws {
        for user in appUserIDs { _ = try await current(user, database: database, now: now) }
    }

    /// Under `transfer_if_inactive`: another user who holds one of `record`'s purchases and is
    /// entitled by it at `now`, judged on their stored facts updated with `record` (Apple's newest
    /// word: a refund it reveals frees the purchase). Writes nothing: the probe is rolled back.
    func activeHolder(of record: VerifiedFacts, holders owners: [String?], other appUserID: String, in db: Database, now: Int64)
        throws -> String?
    {
        struct Probe: Error { let holder: String? }
        // Most posts are by the holder or of something nobody holds: no probe needed.
        var holders: [String] = []
        for holder in owners.compactMap(\.self)
        where !holder.isExactly(appUserID) && !holders.contains(where: { $0.isExactly(holder) }) {
            holders.append(holder)
        }
        guard !holders.isEmpty else { return nil }
        do {
            try db.savepoint {
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
    package struct Current: Sendable {
        package var document: SubscriberDocument
        package var version: Int64
        package var sequence: Int64
    }

    /// Reads a subscriber, bringing their version and events up to date first when their facts,
    /// time or configuration changed their document since it was stored. Nil when unknown.
    ///
    /// The first read may go to a streaming replica that has replayed every change heard of them
    /// (and of the subscriber an alias reads as); a read again after a lost compare-and-set goes
    /// to the primary, where the write is decided.
    ///
    /// On PostgreSQL the first read takes the stored events with it, unless the caller expects no
    /// settle (`behind: false`: a save that changed nothing of theirs), and the settle that follows
    /// sends its compare-and-set unanswered: one round trip where there were two. When it loses,
    /// the next attempt reads again and settles as before, the events read under its lock.
    package func current(_ appUserID: String, database: DatabaseQueue, now: Int64, behind: Bool = true) async throws
        -> Current?
    {
        for attempt in 0..<Self.maxAttempts {
            let withEvents = attempt == 0 && behind && database.dialect == .postgresql
            let read = try await database.read(replicaSeeing: attempt == 0 ? [appUserID] : nil) {
                db -> (SubscriberRecord, Int64, [EventRecord]?)? in
                let events = withEvents ? [try EventStore(db).storedEvents(for: appUserID)] : []
                defer { for statement in events { statement.reset() } }
                guard let subscriber = try ReceiptStore(db).subscriber(appUserID, ahead: events) else { return nil }
                // An alias reads as the subscriber it names, whose events these are not.
                var stored: [EventRecord]?
                if let read = events.first, subscriber.appUserID.isExactly(appUserID) {
                    stored = try EventStore(db).storedEvents(in: read)
                }
                return (subscriber, try ChangeLog(db).last(), stored)
            } dependents: { read in
                read.map { [$0.0.appUserID] } ?? []
            }
            guard let (subscriber, sequence, storedEvents) = read else { return nil }
            let facts = subscriber.pinnedFacts
            let document = document(subscriber, facts: facts, now: now)
            if isSettled(subscriber, document) && subscriber.summaryUntil > now {
                // Settled before documents were kept, or under other settings: keep this one.
                if subscriber.documentSettings != settingsFingerprint {
                    try await database.write { [self] db in try keep(document, version: subscriber.version, in: db, now: now) }
                }
                return Current(document: document, version: subscriber.version, sequence: sequence)
            }
            // Behind (new facts, or a state change since the last read): derive here, write only SQL.
            let events = events(subscriber, facts: facts, now: now)
            let written: (Int64, Int64, Int)?
            do {
                written = try await database.write { [self] db -> (Int64, Int64, Int)? in
                    guard
                        let recorded = try record(
                            subscriber, document: document, events: events, in: db, now: now, storedEvents: storedEvents)
                    else { return nil }
                    return (recorded.version, try ChangeLog(db).last(), recorded.deliveries)
                }
            } catch let error as StorageError where storedEvents != nil && error.lostToAnotherSettle {
                continue  // read again
            }
            if let (version, sequence, deliveries) = written {
                if deliveries > 0 { outbox?.doorbell.ring() }
                return Current(document: document, version: version, sequence: sequence)
            }
            // Another write changed them since the snapshot: read again.
        }
        throw Contended(appUserID: appUserID, attempts: Self.maxAttempts)
    }

    /// ``current(_:database:now:)`` lost every compare-and-set: other writes kept changing the subscriber.
    struct Contended: Error, CustomStringConvertible {
        var appUserID: String
        var attempts: Int
        var description: String { "\(appUserID)'s state changed under each of \(attempts) derivations" }
    }
}
