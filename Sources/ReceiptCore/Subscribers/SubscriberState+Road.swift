package import DatabaseEngine
import Identifiers
package import Logging
import Storage

/// The one road verified facts take, whatever store stated them and whoever asked: one save under
/// the ownership policy (``store(_:for:policy:possession:begun:in:now:log:)``, inside `write`),
/// then everyone whose facts it changed settled (derived again, versioned, their events and
/// webhooks recorded), then, for the person asking, their current document. While a store cannot
/// be asked, ``lastKnown(_:database:now:)`` is what that person had.
extension SubscriberState {
    /// Runs `write` (the save, in the database's writer), refuses as the save did, settles the
    /// others it changed and reads `user`'s document at `now`.
    package func answer(
        for user: String, database: DatabaseQueue, now: Int64, _ write: @escaping @Sendable (Database) throws -> Stored
    ) async throws -> SubscriberSnapshot {
        let changed: [String]
        switch try await database.write(write) {
        case .stored(_, let users): changed = users
        case .inUse: throw ReceiptError.receiptInUse
        case .proofRequired: throw ReceiptError.proofRequired
        }
        // Who lost a purchase to them (the first is `user`, whose document the read below settles).
        try await settle(Array(changed.dropFirst()), database: database, now: now)
        guard let current = try await current(user, database: database, now: now) else {
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
