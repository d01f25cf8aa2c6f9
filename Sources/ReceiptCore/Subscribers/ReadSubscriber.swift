import Clocks
import DatabaseEngine
import Entitlements
import Logging
package import Storage

/// Read a subscriber without calling Apple: their document (from the document cache when it is
/// current, else from storage) and their lifecycle events.
package struct ReadSubscriber: UseCase, Sendable {
    package let context: UseCaseContext
    let cache: SubscriberCache

    package init(context: UseCaseContext, cache: SubscriberCache) {
        self.context = context
        self.cache = cache
    }

    /// The cached rendering of `appUserID`'s document at `now`, when the cache knows it; from
    /// memory only, so it may run on an event loop.
    package func cached(_ appUserID: String) -> (entry: SubscriberCache.Entry, now: Int64)? {
        let at = clock.now()
        return cache.entry(appUserID, now: at).map { ($0, at) }
    }

    /// Keeps `companion` (another rendering of the person's current reading) with the cached
    /// document, if it is still the reading `sequence`/`version` (``SubscriberCache/keep(_:for:sequence:version:)``).
    package func keep(_ companion: any Sendable, for appUserID: String, sequence: Int64, version: Int64) {
        cache.keep(companion, for: appUserID, sequence: sequence, version: version)
    }

    /// A document as sent (never explained): its bytes as of a time, and its version.
    package struct Rendered: Sendable, Equatable {
        package var version: Int64
        package var body: [UInt8]
    }

    /// `appUserID`'s document as kept in their row, when it still describes them now: one row
    /// read, nothing derived (``Storage/DocumentStore``), byte for byte what ``document(_:)``
    /// renders. Nil when it does not (an alias, facts newer than it, another instant or other
    /// settings): ask ``document(_:)``. Fills the cache.
    package func kept(_ appUserID: String) async throws(ReceiptError) -> Rendered? {
        guard let (kept, now) = try await keptDocument(appUserID) else { return nil }
        let body = SubscriberDocument.body(head: kept.json[..<kept.cut], now: now, tail: kept.json[kept.cut...])
        return Rendered(version: kept.version, body: body)
    }

    /// ``kept(_:)`` as the row holds it, and the time it was read at.
    func keptDocument(_ appUserID: String) async throws(ReceiptError) -> (kept: DocumentStore.Kept, now: Int64)? {
        let (at, settings, caching) = (clock.now(), state.settingsFingerprint, cache.capacity > 0)
        let read: (DocumentStore.Kept, Int64)?
        do {
            read = try await database.read(replicaSeeing: [appUserID]) { db in
                // The cache needs to know which changes the reading has seen; nobody else does.
                try DocumentStore(db).kept(appUserID, settings: settings, now: at).map {
                    ($0, caching ? try ChangeLog(db).last() : 0)
                }
            }
        } catch {
            logger.error("reading a subscriber failed", metadata: ["error": "\(error)"])
            throw .internalFault
        }
        guard let (kept, sequence) = read else { return nil }
        if caching { cache.store(appUserID, kept: kept, sequence: sequence) }
        return (kept, at)
    }

    /// The document as of now, its version brought up to date; fills the cache. An alias reads as
    /// the subscriber it names.
    package func document(_ appUserID: String) async throws(ReceiptError) -> SubscriberSnapshot {
        let at = clock.now()
        let read: SubscriberState.Current?
        do {
            read = try await state.current(appUserID, database: database, now: at)
        } catch {
            logger.error("reading a subscriber failed", metadata: ["error": "\(error)"])
            throw .internalFault
        }
        guard let read else { throw .subscriberNotFound }
        cache.store(appUserID, document: read.document, version: read.version, sequence: read.sequence, now: at)
        return SubscriberSnapshot(document: read.document, version: read.version, now: at)
    }

    /// A person as RevenueCat's SDKs ask for one: their document as of now, nil for somebody
    /// nothing is stored about (whom the SDKs read as a customer with nothing), and when receiptd
    /// first heard of them (now for nobody yet). Reads only: asking about an id creates nothing.
    package func customer(_ appUserID: String) async throws(ReceiptError) -> (snapshot: SubscriberSnapshot?, firstSeen: Int64) {
        let snapshot: SubscriberSnapshot
        do {
            snapshot = try await document(appUserID)
        } catch .subscriberNotFound {
            return (nil, clock.now())
        }
        return (snapshot, try await firstSeen(snapshot))
    }

    /// When receiptd first stored the person `snapshot` is of (its time, for a row not found).
    package func firstSeen(_ snapshot: SubscriberSnapshot) async throws(ReceiptError) -> Int64 {
        let canonical = snapshot.document.appUserID
        do {
            let seen = try await database.read(replicaSeeing: [canonical]) { db in try ReceiptStore(db).firstSeen(canonical) }
            return seen ?? snapshot.now
        } catch {
            logger.error("reading when a subscriber was first seen failed", metadata: ["error": "\(error)"])
            throw .internalFault
        }
    }

    /// Where a page of events starts: before the event at `at` with id `id` (newest first).
    package struct EventCursor: Sendable, Equatable {
        package var at: Int64
        package var id: Int64
        package init(at: Int64, id: Int64) {
            self.at = at
            self.id = id
        }
    }

    /// One page of a subscriber's events, newest first, and where the next page starts.
    package struct EventPage: Sendable {
        package var events: [EventRecord]
        package var next: EventCursor?
    }

    /// `limit` events before `cursor` (newest first), after bringing them up to date with time
    /// (an expiration nobody has read yet).
    package func events(_ appUserID: String, limit: Int, before cursor: EventCursor?) async throws(ReceiptError) -> EventPage {
        do {
            guard let current = try await state.current(appUserID, database: database, now: clock.now()) else {
                throw ReceiptError.subscriberNotFound
            }
            let before = cursor.map { ($0.at, $0.id) }
            let canonical = current.document.appUserID  // an alias lists its subscriber's events
            let rows = try await database.read(replicaSeeing: [canonical]) { db in
                try EventStore(db).page(for: canonical, limit: limit + 1, before: before)
            }
            let page = Array(rows.prefix(limit))
            let next = rows.count > limit ? page.last.map { EventCursor(at: $0.at, id: $0.id) } : nil
            return EventPage(events: page, next: next)
        } catch let error as ReceiptError {
            throw error
        } catch {
            logger.error("reading events failed", metadata: ["error": "\(error)"])
            throw .internalFault
        }
    }
}
