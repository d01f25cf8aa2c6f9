package import DatabaseEngine
import Entitlements
import Identifiers
import Storage
import Synchronization

/// Subscriber documents kept rendered in memory, so a backend's GET /v1/subscribers/{id} is
/// answered on the event loop without the database.
///
/// Exact, not approximate: an entry is used only while
/// - no change to its subscriber has been committed since it was read: the database's
///   ``ChangeLog`` reaches ``invalidate(_:)`` for this process's writes before their callers
///   resume, and for other processes' within ``DatabaseQueue/externalPoll`` (see
///   ``DatabaseQueue/followChanges(_:)``), and each removes its subscriber's entry; and
/// - `now` lies in `[readAt, changesAt)`: with the same facts the document reads the same until the
///   next instant the derivation compares with (``SubscriberDocument/changesAt``).
/// A write to one subscriber leaves every other entry alone, so a burst of receipts for new users
/// does not empty the cache that serves the backends' reads.
package final class SubscriberCache: Sendable {
    package struct Entry: Sendable {
        /// The change log's last sequence in the snapshot the document was read from: with
        /// ``version``, which reading of which person this is (a person erased and posted again
        /// starts at version 1 again, at a later sequence).
        package internal(set) var sequence: Int64
        var readAt: Int64
        var changesAt: Int64
        package var version: Int64
        /// The document without explanations, around `request_date`'s value.
        var head: [UInt8]
        var tail: [UInt8]
        /// Another reader's rendering of the same reading (the SDK listener's CustomerInfo), kept
        /// with the entry and gone with it: as exact as the entry, and forgotten when a change or an
        /// erasure ends it (``keep(_:for:sequence:version:)``).
        package internal(set) var companion: (any Sendable)?

        /// The document as of `now`: byte for byte what ``SubscriberDocument/rendered(version:now:explain:)`` gives.
        package func body(now: Int64) -> [UInt8] { SubscriberDocument.body(head: head, now: now, tail: tail) }
    }

    /// The recent changes, so that a document read before a change and stored after it is refused.
    struct Recent {
        var changes: [(sequence: Int64, user: Identifier)] = []
        /// The newest sequence that fell out of `changes` (what is older is no longer known).
        var forgotten: Int64 = 0
        /// The newest sequence heard of.
        var heard: Int64 = 0
    }

    /// Entries at most (0: the cache is off). When full, an arbitrary entry makes room.
    package let capacity: Int
    /// How many recent changes are remembered for documents being read meanwhile.
    static let remembered = 4_096
    /// By the app user id's exact bytes: `Zo\u{EB}` and `Zoe\u{308}` are two users (``Identifier``).
    /// `aliases`: the subscriber an alias read as, and the change log's sequence when it did (an
    /// alias changes only when its subscriber is merged into another or erased, which the change
    /// log tells).
    private let state = Mutex<(entries: [Identifier: Entry], aliases: [Identifier: (Identifier, Int64)], recent: Recent)>(
        ([:], [:], Recent()))

    package init(capacity: Int) { self.capacity = capacity }

    /// The entry for `appUserID` if it still describes the subscriber at `now`.
    func entry(_ appUserID: String, now: Int64) -> Entry? {
        let key = Identifier(appUserID)
        guard capacity > 0,
            let entry = state.withLock({ state in state.entries[key] ?? state.aliases[key].flatMap { state.entries[$0.0] } })
        else { return nil }
        guard entry.readAt <= now, now < entry.changesAt else { return nil }
        return entry
    }

    /// Keeps `document` (its subscriber's, asked for as `requestedID`: their id or an alias), read
    /// in a snapshot whose change log ended at `sequence`, unless a change to either id committed
    /// since (or one may have, past what is remembered).
    package func store(_ requestedID: String, document: SubscriberDocument, version: Int64, sequence: Int64, now: Int64) {
        guard capacity > 0 else { return }
        let (head, tail) = document.template(version: version)
        let entry = Entry(
            sequence: sequence, readAt: now, changesAt: document.changesAt ?? .max, version: version, head: head, tail: tail,
            companion: nil)
        let key = Identifier(document.appUserID)
        store(entry, for: key, alias: Identifier(requestedID) == key ? nil : Identifier(requestedID))
    }

    /// Keeps `entry` for `key` (and `alias`), unless a change to either committed after it was read.
    private func store(_ entry: Entry, for key: Identifier, alias: Identifier?) {
        guard capacity > 0 else { return }
        let sequence = entry.sequence
        state.withLock { state in
            if state.recent.heard > sequence {
                guard state.recent.forgotten <= sequence else { return }
                for change in state.recent.changes.reversed() {
                    if change.sequence <= sequence { break }
                    if change.user == key || change.user == alias || change.user == Self.everyone { return }
                }
            }
            if state.entries.count >= capacity, state.entries[key] == nil { state.entries.remove(at: state.entries.startIndex) }
            state.entries[key] = entry
            if let alias {
                if state.aliases.count >= capacity, state.aliases[alias] == nil {
                    state.aliases.remove(at: state.aliases.startIndex)
                }
                state.aliases[alias] = (key, sequence)
            }
        }
    }

    /// Keeps `appUserID`'s document as their row kept it (read in a snapshot whose change log
    /// ended at `sequence`), as ``store(_:document:version:sequence:now:)`` keeps a derived one:
    /// true from when it was derived until its row says.
    func store(_ appUserID: String, kept: DocumentStore.Kept, sequence: Int64) {
        let entry = Entry(
            sequence: sequence, readAt: kept.derivedAt, changesAt: kept.until, version: kept.version,
            head: Array(kept.json[..<kept.cut]), tail: Array(kept.json[kept.cut...]), companion: nil)
        store(entry, for: Identifier(appUserID), alias: nil)
    }

    /// Keeps `companion` with the entry of `appUserID` (an id or an alias) if the entry is still
    /// the reading `sequence`/`version`; else nothing (a change came between).
    package func keep(_ companion: any Sendable, for appUserID: String, sequence: Int64, version: Int64) {
        guard capacity > 0 else { return }
        let key = Identifier(appUserID)
        state.withLock { state in
            let canonical = state.entries[key] != nil ? key : state.aliases[key]?.0
            guard let canonical, let entry = state.entries[canonical], entry.sequence == sequence, entry.version == version
            else { return }
            state.entries[canonical]?.companion = companion
        }
    }

    /// Forgets the documents `changes` made stale (see ``DatabaseQueue/followChanges(_:)``).
    func invalidate(_ changes: [ChangeLog.Change]) {
        state.withLock { state in
            for change in changes {
                let key = Identifier(change.appUserID)
                if change.appUserID == ChangeLog.everyone {
                    state.entries = state.entries.filter { $0.value.sequence >= change.sequence }
                    state.aliases = state.aliases.filter { $0.value.1 >= change.sequence }
                } else {
                    if let entry = state.entries[key], entry.sequence < change.sequence { state.entries[key] = nil }
                    if let alias = state.aliases[key], alias.1 < change.sequence { state.aliases[key] = nil }
                }
                state.recent.changes.append((change.sequence, key))
                state.recent.heard = max(state.recent.heard, change.sequence)
            }
            let excess = state.recent.changes.count - Self.remembered
            if excess > 0 {
                state.recent.forgotten = state.recent.changes[excess - 1].sequence
                state.recent.changes.removeFirst(excess)
            }
        }
    }

    /// Forgets every entry, and refuses every document read in a snapshot older than `sequence`:
    /// changes up to it may have gone unheard.
    func forgetAll(upTo sequence: Int64) {
        state.withLock { state in
            state.entries = [:]
            state.aliases = [:]
            state.recent.changes = []
            state.recent.heard = max(state.recent.heard, sequence)
            state.recent.forgotten = state.recent.heard
        }
    }

    /// ``ChangeLog/everyone``'s key: a change every entry heeds.
    private static let everyone = Identifier(ChangeLog.everyone)

    /// Follows `database`'s change log from now on.
    package func follow(_ database: DatabaseQueue) {
        database.followChanges({ [self] changes in invalidate(changes) }, lostTrack: { [self] in forgetAll(upTo: $0) })
    }

    package var count: Int { state.withLock { $0.entries.count } }
}
