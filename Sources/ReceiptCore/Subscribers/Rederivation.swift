package import DatabaseEngine
package import Entitlements
import Identifiers
package import Storage

/// `receiptd rederive`: recomputes every subscriber from the raw Apple payloads stored with their
/// purchases. Each subscriber is one short write transaction, so it is safe while receiptd serves:
/// transactions' and renewal snapshots' columns are mapped again from their raw JSON, then the
/// events and the document version are derived again by the same code the service runs.
package struct Rederivation: Sendable {
    /// What changed for one subscriber.
    package struct Change: Sendable, CustomStringConvertible {
        package var appUserID: String
        package var transactions = 0
        package var renewalSnapshots = 0
        /// Stored rows whose raw JSON no longer parses: left as they are.
        package var unreadable = 0
        package var events = EventStore.Changes()
        package var versionBefore: Int64 = 0
        package var versionAfter: Int64 = 0

        package var isEmpty: Bool {
            transactions == 0 && renewalSnapshots == 0 && unreadable == 0 && events.isEmpty && versionBefore == versionAfter
        }

        package var description: String {
            "\(appUserID): transactions \(transactions), renewal snapshots \(renewalSnapshots), unreadable \(unreadable), "
                + "events +\(events.added) -\(events.removed) ~\(events.changed), version \(versionBefore) → \(versionAfter)"
        }
    }

    /// Totals over the run.
    package struct Report: Sendable, CustomStringConvertible {
        package var subscribers = 0
        package var changed = 0
        package var transactions = 0
        package var renewalSnapshots = 0
        package var unreadable = 0
        package var events = EventStore.Changes()
        package var versionsBumped = 0

        package var description: String {
            "\(subscribers) subscribers, \(changed) changed: transactions \(transactions), renewal snapshots \(renewalSnapshots), "
                + "unreadable \(unreadable), events +\(events.added) -\(events.removed) ~\(events.changed), "
                + "versions bumped \(versionsBumped)"
        }
    }

    let state: SubscriberState
    /// Each store's mapping of its stored raw answers: the shipped stores', and any plugged in.
    let mappings: [Store: StoredFactsMapping]

    /// `plugged`: the mappings of stores plugged in beside the shipped ones (``PurchaseStore``).
    package init(settings: EntitlementSettings, plugged: [Store: StoredFactsMapping] = [:]) {
        self.init(state: SubscriberState(settings: settings), plugged: plugged)
    }

    init(state: SubscriberState, plugged: [Store: StoredFactsMapping] = [:]) {
        self.state = state
        mappings = StoredFactsMapping.shipped.merging(plugged) { shipped, _ in shipped }
    }

    private struct DryRun: Error { let change: Change }

    /// Rederives every subscriber at `now`. With `dryRun`, each transaction is rolled back: the
    /// report says what would change. `onChange` hears each subscriber that changed.
    package func run(_ db: Database, now: Int64, dryRun: Bool, onChange: (Change) -> Void = { _ in }) throws -> Report {
        var report = Report()
        var after: String?
        while true {
            let ids = try ReceiptStore(db).subscriberIDs(after: after, limit: 500)
            guard let last = ids.last else { break }
            after = last
            for id in ids {
                let change: Change
                do {
                    change = try db.savepoint { () throws -> Change in
                        let change = try rederive(id, db: db, now: now)
                        if dryRun { throw DryRun(change: change) }
                        return change
                    }
                } catch let rolledBack as DryRun {
                    change = rolledBack.change
                }
                report.subscribers += 1
                guard !change.isEmpty else { continue }
                report.changed += 1
                report.transactions += change.transactions
                report.renewalSnapshots += change.renewalSnapshots
                report.unreadable += change.unreadable
                report.events.added += change.events.added
                report.events.removed += change.events.removed
                report.events.changed += change.events.changed
                if change.versionAfter != change.versionBefore { report.versionsBumped += 1 }
                onChange(change)
            }
        }
        return report
    }

    func rederive(_ appUserID: String, db: Database, now: Int64) throws -> Change {
        let store = ReceiptStore(db)
        var change = Change(appUserID: appUserID)
        guard let stored = try store.subscriber(appUserID) else { return change }
        change.versionBefore = stored.version
        // Each fact mapped again by the store that stated it, never by trying parsers in turn; a
        // renewal belongs to the store of its subscription's purchases (the App Store's when
        // none is stored, as a row without a store is read).
        var storeOf: [Identifier: Store] = [:]
        for t in stored.purchases { storeOf[Identifier(t.fact.originalTransactionID)] = t.fact.store }
        for t in stored.purchases {
            guard let mapped = mappings[t.fact.store]?.purchase(t) else {
                change.unreadable += 1
                continue
            }
            if mapped != t {
                try store.updateColumns(of: mapped)
                change.transactions += 1
            }
        }
        for snapshot in stored.renewals {
            let stating = storeOf[Identifier(snapshot.fact.renewal.originalTransactionID)] ?? .appStore
            guard let mapped = mappings[stating]?.renewal(snapshot) else {
                change.unreadable += 1
                continue
            }
            if mapped != snapshot {
                try store.updateColumns(of: mapped)
                change.renewalSnapshots += 1
            }
        }
        // Their facts changed: marked so, as by any other write of facts.
        if change.transactions + change.renewalSnapshots > 0 { try store.factsChanged([appUserID], at: now) }
        // In this transaction, so nothing comes between the read and the record: it cannot lose.
        guard let fresh = try store.subscriber(appUserID) else { return change }
        let facts = fresh.pinnedFacts
        let document = state.document(fresh, facts: facts, now: now)
        guard
            let recorded = try state.record(
                fresh, document: document, events: state.events(fresh, facts: facts, now: now), in: db, now: now)
        else { throw SubscriberState.Contended(appUserID: appUserID, attempts: 1) }
        change.events = recorded.events
        change.versionAfter = recorded.version
        return change
    }
}
