import Clocks
import DatabaseEngine
import JSON
import Logging
package import ReceiptCore
import Storage

/// Erase a person (GDPR art. 17, CCPA): everything stored under their app user id, in one
/// transaction (``Erasure``), then their rows of the chart rollups in another (on SQLite those
/// are a file of their own: ``RollupStore/forget(_:marksOf:)``), then both files scrubbed of the
/// pages as they were (``Database/scrubAfterErasure()``); caches forget through the change log.
/// The `DELETE /v1/subscribers/{id}` route and `receiptd erase` call it.
///
/// Should the second transaction fail after the first, the answer is an error and the log says
/// so; the rollups still forget them, since the erasure's change has the keeper rebuild them
/// from nothing.
package struct EraseSubscriber: UseCase, Sendable {
    package let context: UseCaseContext

    package init(context: UseCaseContext) {
        self.context = context
    }

    /// Erases `appUserID`; `asker` is recorded in the audit row (a key's fingerprint, or "cli").
    /// Anyone whose id any row holds is erased, a subscriber or not (an offer asked for, a refused
    /// verification, a retention answer); ``ReceiptError/subscriberNotFound`` (and nothing
    /// recorded) for an id nothing stored names. A write that began before (a call to a store in
    /// flight) cannot bring them back (``ErasedIDs``).
    package func callAsFunction(_ appUserID: String, by asker: String) async throws(ReceiptError) -> Erased {
        let now = clock.now()
        var outcome: Erasure.Outcome
        do {
            outcome = try await database.write(durable: true) { db in
                let outcome = try Erasure(db).erase(appUserID, by: asker, at: now)
                guard outcome.found else { throw NotStored() }
                return outcome
            }
        } catch is NotStored {
            throw .subscriberNotFound
        } catch {
            logger.error("an erasure failed; nothing was erased", metadata: ["error": "\(error)"])
            throw .internalFault
        }
        do {
            let ids = outcome.ids
            let forgotten = try await database.write(durable: true, attached: true) { db in
                try db.lock([RollupStore.lockKey])
                let store = RollupStore(db)
                let lost = try store.forget(ids, marksOf: RollupStore.marks(ofKept:))
                // A keeper's step that read before the erasure writes nothing after it (it writes
                // only while the state is what it read): the rollups are rebuilt from the facts.
                var state = try store.state()
                state.fingerprint = ""
                try store.save(state)
                return lost
            }
            outcome.rows.merge(forgotten, uniquingKeysWith: +)
        } catch {
            logger.error(
                "an erasure's rows of the chart rollups were not erased; the rollups' rebuild will",
                metadata: ["error": "\(error)"])
            throw .internalFault
        }
        do {
            try await database.run { db in try db.scrubAfterErasure() }
            try await database.run(attached: true) { db in try db.scrubAfterErasure() }
        } catch {
            // The rows are gone; old copies of their pages may linger in the WAL until the next
            // full checkpoint. Said, not hidden: the audit row stands, the caller learns it.
            logger.error("an erasure's WAL checkpoint did not complete", metadata: ["error": "\(error)"])
            throw .internalFault
        }
        logger.notice("a subscriber was erased", metadata: ["rows": "\(outcome.total)", "by": "\(asker)"])
        return Erased(rows: outcome.rows)
    }

    /// What an erasure removed or blanked.
    package struct Erased: Sendable, Equatable {
        /// Per table, rows deleted or changed; tables untouched are absent.
        package var rows: [String: Int]
        package var total: Int { rows.values.reduce(0, +) }
    }

    private struct NotStored: Error {}
}
