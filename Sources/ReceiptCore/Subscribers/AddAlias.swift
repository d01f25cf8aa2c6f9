import Clocks
import DatabaseEngine
import Entitlements
import Identifiers
import Logging
import Storage
import Workers

/// Make another app user id one with a subscriber (`POST /v1/subscribers/{id}/aliases`): the app
/// learnt who an anonymous user is, or two accounts are one person. Afterwards every read and write
/// under either id reaches one subscriber: one document, one history, the ownership rules seeing
/// one user; a `merge` event records it (Docs/state.md "Identity").
///
/// When both ids hold purchases, the ownership policy decides as it would for a second poster:
/// - `transfer`: the union; the alias's purchases move to the subscriber;
/// - `keep`: refused (``ReceiptError/mergeConflict``), nothing changes;
/// - `transfer_if_inactive`: the union when none of the alias's purchases entitles it to
///   anything now, else refused as under `keep`.
/// When only one of them holds purchases no purchase changes person, and every policy merges.
package struct AddAlias: UseCase, Sendable {
    package let context: UseCaseContext

    package init(context: UseCaseContext) {
        self.context = context
    }

    /// What happened.
    package struct Outcome: Sendable {
        /// The subscriber after it, under its canonical id.
        package var snapshot: SubscriberSnapshot
        /// False when `alias` already named the subscriber: nothing changed.
        package var merged: Bool
        /// The purchases that moved from the alias.
        package var moved: [String]
    }

    /// Makes `alias` another id of the subscriber `appUserID` names (created when unknown).
    package func callAsFunction(_ appUserID: String, alias: String) async throws(ReceiptError) -> Outcome {
        _ = try FieldRules.appUserID(appUserID)
        _ = try FieldRules.appUserID(alias, field: "alias")
        guard !appUserID.isExactly(alias) else { throw .invalidRequest("`alias` is the subscriber's own id.") }
        let now = clock.now()
        let merged: Merge.Outcome?
        do {
            merged = try await database.write { [policy, state] db in
                try Self.merge(alias, into: appUserID, policy: policy, state: state, in: db, now: now)
            }
        } catch let error as ReceiptError {
            throw error
        } catch {
            logger.error("merging two subscribers failed; nothing changed", metadata: ["error": "\(error)"])
            throw .internalFault
        }
        do {
            guard let current = try await state.current(appUserID, database: database, now: now) else {
                throw ReceiptError.internalFault
            }
            if let merged {
                logger.notice(
                    "two app user ids were merged",
                    metadata: ["moved": "\(merged.moved.count)", "known": "\(merged.aliasWasKnown)"])
            }
            return Outcome(
                snapshot: SubscriberSnapshot(document: current.document, version: current.version, now: now),
                merged: merged != nil, moved: merged?.moved ?? [])
        } catch let error as ReceiptError {
            throw error
        } catch {
            logger.error("reading a merged subscriber failed", metadata: ["error": "\(error)"])
            throw .internalFault
        }
    }

    /// In one write transaction: the checks, then ``Merge``. Nil when `alias` already names the subscriber.
    static func merge(
        _ alias: String, into requestedID: String, policy: OwnershipPolicy, state: SubscriberState, in db: Database, now: Int64
    ) throws -> Merge.Outcome? {
        try db.transaction { () throws -> Merge.Outcome? in
            let store = ReceiptStore(db)
            let merge = Merge(db)
            // Who holds what is read again once locked (another instance may have moved something).
            try store.lock(purchases: try merge.held(by: alias), subscriber: nil)
            try db.lock(["subscriber:" + alias, "subscriber:" + requestedID])
            let canonical = try store.canonical(requestedID)
            if !canonical.isExactly(requestedID) { try db.lock(["subscriber:" + canonical]) }
            let target = try store.canonical(alias)
            if target.isExactly(canonical) { return nil }  // already one
            guard target.isExactly(alias) else { throw ReceiptError.aliasTaken }
            let theirs = try merge.held(by: alias)
            try store.lock(purchases: theirs, subscriber: nil)
            if !theirs.isEmpty, !(try merge.held(by: canonical).isEmpty) {
                switch policy {
                case .transfer: break
                case .keep: throw ReceiptError.mergeConflict
                case .transferIfInactive:
                    if let record = try store.subscriber(alias), !state.entitlingOriginals(record, now: now).isEmpty {
                        throw ReceiptError.mergeConflict
                    }
                }
            }
            let merged = try merge.merge(alias, into: canonical, at: now)
            try tellApple(merged.moved, now: canonical, state: state, in: db, at: now)
            return merged
        }
    }

    /// With `appStore.setAppAccountTokens`, the purchases the merge moved are told their new
    /// person's token (``SubscriberState/queueCalls(_:for:transferred:_:in:now:)``, as a transfer):
    /// the alias's own token, if receiptd had made one, went with the alias.
    private static func tellApple(
        _ moved: [String], now canonical: String, state: SubscriberState, in db: Database, at now: Int64
    ) throws {
        guard let calls = state.appleCalls, !moved.isEmpty, let record = try ReceiptStore(db).subscriber(canonical) else {
            return
        }
        let purchases = record.purchases.filter { p in moved.contains { $0.isExactly(p.fact.originalTransactionID) } }
        let facts = VerifiedFacts(environment: purchases.first?.fact.environment ?? .production, purchases: purchases)
        if try state.queueCalls(facts, for: canonical, transferred: true, calls, in: db, now: now) > 0 { calls.doorbell.ring() }
    }
}
