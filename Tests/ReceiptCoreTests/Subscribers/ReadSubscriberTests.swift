import DatabaseEngine
import Entitlements
import Identifiers
import JSON
import ReceiptTesting
import Storage
import Testing

@testable import ReceiptCore

private func state(_ rules: [String: [String]]) -> SubscriberState {
    SubscriberState(settings: EntitlementSettings(rules: EntitlementRules(rules), catalog: Catalog(), policy: DerivationPolicy()))
}

/// Issue 62: a read whose document is still true is the document its row kept, one row read.
@Suite("Reading a subscriber")
struct ReadSubscriberTests {
    /// A reader of `queue` under `rules`, at `clock`, with a document cache of `cache` entries.
    private func reader(
        _ queue: DatabaseQueue, _ clock: TestClock, rules: [String: [String]] = ["pro": ["monthly"]], cache: Int = 0
    )
        -> ReadSubscriber
    {
        ReadSubscriber(
            context: .testing(queue, clock: clock.wall, state: state(rules)), cache: SubscriberCache(capacity: cache))
    }

    /// Ann's monthly subscription (SubscriberStateTests' `monthly`, renewing) stored, not yet
    /// derived, in a queue of `dialect`; the clock a day after she bought it.
    private func withAnn(_ dialect: Database.Dialect, _ body: (DatabaseQueue, TestClock) async throws -> Void) async throws {
        try await withScratchDirectory("receiptd-read") { dir in
            let queue = try await migratedQueue(dialect, in: dir)
            _ = try await queue.write { db in
                try state(["pro": ["monthly"]]).store(monthly(autoRenew: true), for: "ann", policy: .transfer, in: db, now: t0)
            }
            try await body(queue, TestClock(t0 + day))
        }
    }

    /// The kept document's bytes at `now`, as the API sends them.
    private func body(_ kept: DocumentStore.Kept, now: Int64) -> [UInt8] {
        Array(kept.json[..<kept.cut]) + CivilTime.rfc3339(now).utf8 + Array(kept.json[kept.cut...])
    }

    @Test(arguments: await testDialects())
    func theKeptDocumentIsTheDerivedOneByteForByteUntilItMayReadDifferently(_ dialect: Database.Dialect) async throws {
        try await withAnn(dialect) { queue, clock in
            let read = reader(queue, clock)
            // Not derived yet: nothing kept. The first read derives and keeps it.
            #expect(try await read.keptDocument("ann") == nil)
            let derived = try await read.document("ann")
            let (kept, now) = try #require(try await read.keptDocument("ann"))
            #expect(body(kept, now: now) == derived.document.body(version: derived.version, now: now))
            #expect(kept.version == derived.version && kept.until == t0 + 30 * day)
            // As sent: the same bytes at the clock's time.
            #expect(
                try await read.kept("ann")
                    == ReadSubscriber.Rendered(
                        version: kept.version, body: derived.document.body(version: kept.version, now: now)))
            // Later the same, to the millisecond before the expiry; not at it.
            clock.advance(by: 29 * day - 1)
            let later = try #require(try await read.keptDocument("ann"))
            #expect(body(later.kept, now: later.now) == derived.document.body(version: derived.version, now: later.now))
            clock.advance(by: 1)
            #expect(try await read.keptDocument("ann") == nil)
            // Derived again (expired: a new version), and kept again.
            let expired = try await read.document("ann")
            #expect(expired.version == derived.version + 1)
            let again = try #require(try await read.keptDocument("ann"))
            #expect(body(again.kept, now: again.now) == expired.document.body(version: expired.version, now: again.now))
            #expect(again.kept.until == .max)
            // Nobody, and another spelling of ann, have none.
            #expect(try await read.keptDocument("nobody") == nil)
            #expect(try await read.keptDocument("Ann") == nil)
        }
    }

    /// An instance started with other entitlements does not read what another derived under the
    /// old ones: it derives, and keeps its own; the old settings then find none.
    @Test(arguments: await testDialects())
    func otherSettingsDeriveAgain(_ dialect: Database.Dialect) async throws {
        try await withAnn(dialect) { queue, clock in
            let (old, new) = (reader(queue, clock), reader(queue, clock, rules: ["pro": ["monthly"], "gold": ["monthly"]]))
            _ = try await old.document("ann")
            #expect(try await old.keptDocument("ann") != nil)
            #expect(try await new.keptDocument("ann") == nil)
            let derived = try await new.document("ann")
            #expect(derived.document.content["entitlements"]?["gold"] != nil)
            let (kept, now) = try #require(try await new.keptDocument("ann"))
            #expect(body(kept, now: now) == derived.document.body(version: derived.version, now: now))
            #expect(try await old.keptDocument("ann") == nil)
            // Settings whose document reads the same (a rule for a product ann has none of) keep
            // their own without a new version.
            let same = reader(queue, clock, rules: ["pro": ["monthly"], "gold": ["monthly"], "x": ["yearly"]])
            #expect(try await same.keptDocument("ann") == nil)
            #expect(try await same.document("ann").version == derived.version)
            #expect(try await same.keptDocument("ann")?.kept.version == derived.version)
        }
    }

    /// A row settled before documents were kept (or whose document went) gets one on its next
    /// read, without a new version.
    @Test(arguments: await testDialects())
    func aSettledRowWithoutADocumentGetsOneOnItsNextRead(_ dialect: Database.Dialect) async throws {
        try await withAnn(dialect) { queue, clock in
            let read = reader(queue, clock)
            let derived = try await read.document("ann")
            try await queue.write { db in try db.execute("UPDATE subscribers SET document = NULL, document_settings = NULL") }
            #expect(try await read.keptDocument("ann") == nil)
            #expect(try await read.document("ann").version == derived.version)
            #expect(try await read.keptDocument("ann")?.kept.version == derived.version)
        }
    }

    /// With the cache on, a kept document read fills it: the next read is from memory, the same bytes.
    @Test func aKeptDocumentFillsTheCache() async throws {
        try await withAnn(.sqlite) { queue, clock in
            let (deriving, reading) = (reader(queue, clock), reader(queue, clock, cache: 10))
            _ = try await deriving.document("ann")
            #expect(reading.cached("ann") == nil)
            let (kept, _) = try #require(try await reading.keptDocument("ann"))
            clock.advance(by: day)
            let (entry, now) = try #require(reading.cached("ann"))
            #expect(entry.version == kept.version && entry.body(now: now) == body(kept, now: now))
            clock.advance(by: 29 * day)  // past the expiry: the entry is not used
            #expect(reading.cached("ann") == nil)
        }
    }
}
