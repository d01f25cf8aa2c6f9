import Entitlements
import Identifiers
import Storage
import Synchronization

/// Subscriber documents kept rendered in memory, so a backend's GET /v1/subscribers/{id} is
/// answered on the event loop without the database.
///
/// Exact, not approximate: an entry is used only while
/// - the database's ``DatabaseQueue/generation`` is the one it was read at (no write since: every
///   write through our queue moves it before its caller resumes, another process's commit within
///   ``DatabaseQueue/externalPoll``), and
/// - `now` lies in `[readAt, changesAt)`: with the same facts the document reads the same until the
///   next instant the derivation compares with (``SubscriberDocument/changesAt``).
/// A write anywhere empties it in effect (the generation is global): under a write load GETs read
/// storage as before, and fill it again as writes pause.
package final class SubscriberCache: Sendable {
    package struct Entry: Sendable {
        var generation: UInt64
        var readAt: Int64
        var changesAt: Int64
        package var version: Int64
        /// The document without explanations, around `request_date`'s value.
        var head: [UInt8]
        var tail: [UInt8]

        /// The document as of `now`: byte for byte what ``SubscriberDocument/rendered(version:now:explain:)`` gives.
        package func body(now: Int64) -> [UInt8] {
            var body: [UInt8] = []
            body.reserveCapacity(head.count + 24 + tail.count)
            body += head
            body += CivilTime.rfc3339(now).utf8
            body += tail
            return body
        }
    }

    /// Entries at most (0: the cache is off). When full, an arbitrary entry makes room.
    let capacity: Int
    /// By the app user id's exact bytes: `Zo\u{EB}` and `Zoe\u{308}` are two users (``Identifier``).
    private let entries = Mutex<[Identifier: Entry]>([:])

    package init(capacity: Int) { self.capacity = capacity }

    /// The entry for `appUserID` if it still describes the subscriber at `now`.
    func entry(_ appUserID: String, generation: UInt64, now: Int64) -> Entry? {
        guard capacity > 0, let entry = entries.withLock({ $0[Identifier(appUserID)] }) else { return nil }
        guard entry.generation == generation, entry.readAt <= now, now < entry.changesAt else { return nil }
        return entry
    }

    /// Keeps `document`, read at database generation `generation` (taken *before* the read).
    func store(_ appUserID: String, document: SubscriberDocument, version: Int64, generation: UInt64, now: Int64) {
        guard capacity > 0 else { return }
        let (head, tail) = document.template(version: version)
        let entry = Entry(
            generation: generation, readAt: now, changesAt: document.changesAt ?? .max, version: version, head: head,
            tail: tail)
        let key = Identifier(appUserID)
        entries.withLock { entries in
            if entries.count >= capacity, entries[key] == nil { entries.remove(at: entries.startIndex) }
            entries[key] = entry
        }
    }

    package var count: Int { entries.withLock { $0.count } }
}
