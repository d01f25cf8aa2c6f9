import Clocks
import DatabaseEngine
package import Entitlements
package import JSON
import Logging
import Storage

/// Verify a posted purchase of a store plugged in through ``PurchaseStore`` and store what it
/// proves: the claim read before anything is asked, the store asked, the attempt logged, then the
/// one road (``SubscriberState/answer(for:database:now:_:)``) under the ownership policy. While the
/// store cannot answer, the person's last known document; to an app, one that names no purchase
/// (its claim proved nothing yet).
package struct VerifyStorePurchase: UseCase, Sendable {
    /// A claim read, to verify for the caller who posted it.
    package typealias Verification = @Sendable (Caller) async throws(ReceiptError) -> SubscriberSnapshot

    package let store: Store
    package let mapping: StoredFactsMapping
    /// Reads a claim from a body, and returns the asking of the store about it.
    private let read: @Sendable (JSONValue) throws(ReceiptError) -> @Sendable () async throws(ReceiptError) -> StoreAnswer
    package let context: UseCaseContext

    package init<S: PurchaseStore>(context: UseCaseContext, _ source: S) {
        store = source.store
        mapping = source.mapping
        read = { body throws(ReceiptError) in
            let claim = try source.claim(in: body)
            return { () async throws(ReceiptError) -> StoreAnswer in try await source.verify(claim) }
        }
        self.context = context
    }

    /// Reads `body`'s claim for `user` (refusing a bad field before the store is asked) and
    /// returns the verification, to run for whoever posted it.
    package func claim(in body: JSONValue, user: String) throws(ReceiptError) -> Verification {
        _ = try FieldRules.appUserID(user)
        let ask = try read(body)
        return { caller throws(ReceiptError) in try await verify(ask, user: user, caller: caller) }
    }

    private func verify(
        _ ask: @Sendable () async throws(ReceiptError) -> StoreAnswer, user: String, caller: Caller
    ) async throws(ReceiptError) -> SubscriberSnapshot {
        let begun = clock.now()  // before the store is asked: an erasure since then wins
        let started = monotonic.now
        do {
            let answer: StoreAnswer
            do {
                answer = try await ask()
            } catch {
                let log = VerificationLogEntry(
                    appUserID: user, environment: nil, appleStatus: nil, outcome: .refused(error), attempts: 1,
                    latencyMs: (monotonic.now - started).milliseconds)
                let at = clock.now()
                try await database.write { db in try ReceiptStore(db).log(log, at: at, unlessErasedSince: begun) }
                guard case .storeUnavailable(let s, let status, let seconds, nil) = error else { throw error }
                var known = await state.lastKnown(user, database: database, now: clock.now())
                if caller == .app { known?.snapshot.proven = [] }
                throw ReceiptError.storeUnavailable(s, storeStatus: status, retryAfterSeconds: seconds, lastKnown: known)
            }
            // A store states its own purchases only.
            guard answer.facts.purchases.allSatisfy({ $0.fact.store == store }) else {
                logger.error("a store stated another store's purchase", metadata: ["store": "\(store)"])
                throw ReceiptError.internalFault
            }
            let log = VerificationLogEntry(
                appUserID: user, environment: answer.facts.environment, appleStatus: nil, outcome: .stated(by: store),
                attempts: 1,
                latencyMs: (monotonic.now - started).milliseconds)
            let at = clock.now()
            var snapshot = try await state.answer(for: user, database: database, now: at) { [state, policy] db in
                // A backend's secret key keeps its power; an app's bare id attaches, never moves.
                try state.save(
                    answer.facts, for: user, policy: policy, possession: caller == .app ? answer.possession : .proven,
                    begun: begun, in: db, now: at, log: log)
            }
            // A backend sees every purchase; an app, the ones its claim proved.
            snapshot.proven = caller == .backend ? nil : answer.proven
            return snapshot
        } catch {
            throw ReceiptError(saving: error, logger: logger, "verifying a \(store) purchase")
        }
    }
}
