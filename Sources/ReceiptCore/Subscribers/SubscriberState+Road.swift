package import DatabaseEngine
import Identifiers
package import Logging
import Storage
import Webhooks
import Workers

/// The one road verified facts take, whatever store stated them and whoever asked: one save under
/// the ownership policy (``store(_:for:policy:possession:begun:in:now:log:)``, inside `write`),
/// then everyone whose facts it changed settled (derived again, versioned, their events and
/// webhooks recorded), then, for the person asking, their current document. While a store cannot
/// be asked, ``lastKnown(_:database:now:)`` is what that person had.
extension SubscriberState {
    /// Runs `write` (the save, in the database's writer: ``save(_:for:policy:possession:begun:in:now:log:)``,
    /// or ``Saving/done(_:)`` of another), refuses as the save did, settles the others it changed
    /// and reads `user`'s document at `now`.
    package func answer(
        for user: String, database: DatabaseQueue, now: Int64, _ write: @escaping @Sendable (Database) throws -> Saving
    ) async throws -> SubscriberSnapshot {
        // On SQLite everyone it changed is settled in the save (``settle(_:in:now:)``).
        // On PostgreSQL after it, from a reader's snapshot, derived on this task: derived in the
        // save there, a change sometimes took longer than 100 ms to reach the other instances'
        // caches (the scale drill; Docs/performance.md, "A save alone").
        let inSave = database.dialect == .sqlite
        let (saving, settledInSave): (Saving, SettledInSave)
        do {
            (saving, settledInSave) = try await database.write { [self] db -> (Saving, SettledInSave) in
                let saving = try write(db)
                guard inSave, case .done(.stored(_, let users)) = saving else { return (saving, SettledInSave()) }
                return (saving, try settle(users, asking: user, in: db, now: now))
            }
        } catch {
            throw ErasedIDs.meaning(of: error)  // a whole save's erasure check fails its commit
        }
        var settled = settledInSave
        let stored = try saving.stored()
        switch stored {
        case .stored(_, let users): if !inSave { settled.behind = Array(users.dropFirst()) }
        case .inUse: throw ReceiptError.receiptInUse
        case .proofRequired: throw ReceiptError.proofRequired
        }
        // Saved again unchanged, the facts another instance stored a moment ago are the primary's
        // and perhaps not yet a replica's: the read below must see what the save saw.
        database.wroteSeeing([user])
        if settled.deliveries > 0 { outbox?.doorbell.ring() }
        try await settle(settled.behind, database: database, now: now)
        if let user = settled.user {
            return SubscriberSnapshot(document: user.document, version: user.version, now: now)
        }
        guard let current = try await current(user, database: database, now: now, behind: stored.changed(user)) else {
            // Stored, and gone before it could be read: erased in between (the erasure stands,
            // and the caller hears `erased_meanwhile`, as when it came before the save). Erased
            // at any time: an erasure's instant is taken before it waits for this save's locks.
            if try await database.read({ try ErasedIDs($0).anyErased([user], since: .min) }) {
                throw ErasedIDs.ErasedMeanwhile()
            }
            // Not an erasure: the callers log what was being done and answer an internal fault.
            throw SubscriberVanished()
        }
        return SubscriberSnapshot(document: current.document, version: current.version, now: now)
    }

    /// A subscriber settled in the save that changed them (``settle(_:in:now:)``), and the webhook
    /// deliveries it queued.
    struct Settled: Sendable {
        var document: SubscriberDocument
        var version: Int64
        var deliveries: Int
    }

    /// What a save settled: its user (nil: read after the commit), the others it changed and
    /// could not settle (to settle after it), the webhook deliveries queued.
    struct SettledInSave: Sendable {
        var user: Settled?
        var behind: [String] = []
        var deliveries = 0
    }

    /// Settles `users` (whose facts a save changed: who lost a purchase to the one asking first,
    /// then the one asking), in `db`'s transaction.
    func settle(_ users: [String], asking user: String, in db: Database, now: Int64) throws -> SettledInSave {
        var done = SettledInSave()
        for other in users.dropFirst() {
            guard let other = try settle(other, in: db, now: now) else {
                done.behind.append(other)
                continue
            }
            done.deliveries += other.deliveries
        }
        done.user = try settle(user, in: db, now: now)
        done.deliveries += done.user?.deliveries ?? 0
        return done
    }

    /// In the caller's save, once its facts are written (SQLite): reads `user`, derives their
    /// document and, when it is not the one stored, records it (``record(_:document:events:in:now:)``).
    /// One transaction where there were three (the save, a read, the settle); the derivation runs
    /// on the writer's thread. Nil when `user` is not stored under that id, or the compare-and-set
    /// lost (the writer's lock keeps other writers out, so it should not): the caller reads again
    /// after the commit.
    func settle(_ user: String, in db: Database, now: Int64) throws -> Settled? {
        guard let subscriber = try ReceiptStore(db).subscriber(user) else { return nil }
        let facts = subscriber.pinnedFacts
        let document = document(subscriber, facts: facts, now: now)
        if isSettled(subscriber, document) && subscriber.summaryUntil > now {
            if subscriber.documentSettings != settingsFingerprint {
                try keep(document, version: subscriber.version, in: db, now: now)
            }
            return Settled(document: document, version: subscriber.version, deliveries: 0)
        }
        let events = events(subscriber, facts: facts, now: now)
        guard let recorded = try record(subscriber, document: document, events: events, in: db, now: now) else { return nil }
        return Settled(document: document, version: recorded.version, deliveries: recorded.deliveries)
    }

    /// After a save no one waits on (a notification, a refresh, a void): settles who it changed.
    /// The facts are stored either way; should this fail, each is derived again at their next read.
    package func settleStored(_ changed: [String], database: DatabaseQueue, now: Int64, logger: Logger, after what: String) async
    {
        do {
            var seen: Set<Identifier> = []  // two spellings of an id are two subscribers
            try await settle(changed.filter { seen.insert(Identifier($0)).inserted }, database: database, now: now)
        } catch {
            logger.warning("\(what) stored; its subscribers are derived on their next read", metadata: ["error": "\(error)"])
        }
    }

    /// What `user` had, while the store cannot be asked: nothing stored changes.
    func lastKnown(_ user: String, database: DatabaseQueue, now: Int64) async -> ReceiptError.LastKnown? {
        guard let read = try? await current(user, database: database, now: now) else { return nil }
        let verifiedAt = (try? await database.read { db in try ReceiptStore(db).lastVerifiedAt(user) }) ?? nil
        return .init(
            snapshot: SubscriberSnapshot(document: read.document, version: read.version, now: now), verifiedAt: verifiedAt)
    }
}

/// A subscriber whose facts were just stored and whose row a read right after found gone, though
/// nobody erased them: nothing should do that, so it is logged and answered as an internal fault.
struct SubscriberVanished: Error, CustomStringConvertible {
    var description: String { "the subscriber just stored was gone when read (not erased)" }
}
