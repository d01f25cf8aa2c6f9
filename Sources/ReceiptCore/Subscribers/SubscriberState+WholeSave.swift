package import DatabaseEngine
package import Entitlements
package import Storage

// The save of the answer's road (``SubscriberState/answer(for:database:now:_:)``), on PostgreSQL
// in one round trip with its commit when it can be.
extension SubscriberState {
    /// What a save on the answer's road did: stored or refused, or sent whole, its outcome known
    /// once the commit has answered.
    package enum Saving: Sendable {
        case done(Stored)
        case sent(ReceiptStore.SentSave)

        /// What it did, once its write has returned.
        func stored() throws -> Stored {
            switch self {
            case .done(let stored): return stored
            case .sent(let sent):
                guard let outcome = sent.outcome else { throw UnansweredSave() }
                return .stored(changes: outcome.changes, changed: outcome.changed)
            }
        }
    }

    /// ``store(_:for:policy:possession:begun:in:now:log:)`` for a caller that reads what it did
    /// only after the commit (``answer(for:database:now:_:)``): sent whole when it can be
    /// (``sendsWhole(policy:possession:in:)``, ``Storage/ReceiptStore/saveWhole(_:for:begun:now:)``),
    /// with `log`, the same rows in one round trip; else stored as always.
    package func save(
        _ facts: VerifiedFacts, for requestedID: String, policy: OwnershipPolicy, possession: Possession = .proven,
        begun: Int64? = nil, in db: Database, now: Int64, log: VerificationLogEntry? = nil
    ) throws -> Saving {
        guard sendsWhole(policy: policy, possession: possession, in: db) else {
            return .done(
                try store(
                    facts, for: requestedID, policy: policy, possession: possession, begun: begun, in: db, now: now, log: log))
        }
        return try db.transaction {
            let sent = try ReceiptStore(db).saveWhole(facts, for: requestedID, begun: begun, now: now)
            if let log { try ReceiptStore(db).log(log, at: now) }
            return .sent(sent)
        }
    }

    /// Whether a save can go whole: on PostgreSQL, under `transfer` (it takes every purchase, so
    /// nothing the policy would read decides what is written), of purchases proven (a bare
    /// transaction id's check reads who holds them), with no calls to Apple to queue (they read
    /// what the save writes). Any other goes as on SQLite: read, decide, write.
    func sendsWhole(policy: OwnershipPolicy, possession: Possession, in db: Database) -> Bool {
        db.dialect == .postgresql && policy == .transfer && possession == .proven && appleCalls == nil
    }
}

/// A save sent whole whose write returned without its answer: its commit answers it before the
/// write returns, so nothing should; the caller answers an internal fault.
struct UnansweredSave: Error, CustomStringConvertible {
    var description: String { "a save sent whole returned without its commit's answer" }
}
