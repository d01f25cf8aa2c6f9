import Identifiers
import Synchronization

/// CustomerInfo kept written, beside receiptd's own document cache (``SubscriberCache``), so the
/// SDK's most frequent call (`GET /v1/subscribers/{id}`, on every launch and foreground) is
/// answered on the event loop as receiptd's own GET is. An entry is the `subscriber` member
/// written once for one reading of one person (the document cache entry's change-log sequence
/// and version): it is used only while the document cache holds that same reading, and so shares
/// its exactness (no change committed since, `now` before the next instant the state changes).
final class SDKCustomerCache: Sendable {
    struct Entry: Sendable {
        var sequence: Int64
        var version: Int64
        /// The `subscriber` member's JSON.
        var subscriber: [UInt8]
        /// Its `X-RevenueCat-ETag`.
        var tag: String
    }

    /// Entries at most (the document cache's capacity; 0: off).
    let capacity: Int
    private let entries = Mutex<[Identifier: Entry]>([:])

    init(capacity: Int) { self.capacity = capacity }

    /// The entry for `appUserID` written from the reading `sequence`/`version`, if kept.
    func entry(_ appUserID: String, sequence: Int64, version: Int64) -> Entry? {
        guard capacity > 0, let entry = entries.withLock({ $0[Identifier(appUserID)] }),
            entry.sequence == sequence, entry.version == version
        else { return nil }
        return entry
    }

    /// Keeps `entry` for `appUserID` (as asked: an id or an alias); an arbitrary one makes room.
    func store(_ appUserID: String, _ entry: Entry) {
        guard capacity > 0 else { return }
        let key = Identifier(appUserID)
        entries.withLock { entries in
            if entries.count >= capacity, entries[key] == nil { entries.remove(at: entries.startIndex) }
            entries[key] = entry
        }
    }
}
