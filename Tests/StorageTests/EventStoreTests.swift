import DatabaseEngine
import Identifiers
import ReceiptTesting
import Testing

@testable import Storage

private func event(_ key: String, at: Int64, original: String = "o1", facts: String = "{}") -> EventRecord {
    EventRecord(
        key: key, type: String(key.prefix { $0 != ":" }), at: at, productID: "p", originalTransactionID: original,
        transactionID: nil, factsJSON: facts)
}

@Suite("Event store")
struct EventStoreTests {
    /// A migrated database with the subscriber `u`.
    private func database(_ dialect: Database.Dialect) async throws -> Database {
        let db = try await migratedDatabase(dialect)
        try db.execute("INSERT INTO subscribers (app_user_id, created_at, updated_at) VALUES ('u', 0, 0)")
        return db
    }

    @Test(arguments: await testDialects())
    func replacingWithTheSameEventsChangesNothing(dialect: Database.Dialect) async throws {
        let store = EventStore(try await database(dialect))
        let events = [event("renewal:t1", at: 5), event("refund:t1", at: 9)]
        var first = EventStore.Changes()
        first.added = 2
        #expect(try store.replace(events, for: "u", originals: ["o1"], now: 100) == first)
        #expect(try store.replace(events, for: "u", originals: ["o1"], now: 200).isEmpty)
        #expect(try store.page(for: "u", limit: 10, before: nil).map(\.recordedAt) == [100, 100])
    }

    @Test(arguments: await testDialects())
    func vanishedEventsGoChangedOnesAreUpdatedOthersPurchasesStay(dialect: Database.Dialect) async throws {
        let store = EventStore(try await database(dialect))
        _ = try store.replace([event("a:1", at: 1), event("b:1", at: 2)], for: "u", originals: ["o1"], now: 1)
        _ = try store.replace([event("x:2", at: 3, original: "o2")], for: "u", originals: ["o2"], now: 1)
        let changes = try store.replace([event("a:1", at: 1, facts: #"{"k":1}"#)], for: "u", originals: ["o1"], now: 2)
        #expect(changes.added == 0 && changes.removed == 1 && changes.changed == 1)
        #expect(try store.page(for: "u", limit: 10, before: nil).map(\.key) == ["x:2", "a:1"])
    }

    @Test(arguments: await testDialects())
    func pagesGoNewestFirstWithoutGapsOrRepeats(dialect: Database.Dialect) async throws {
        let store = EventStore(try await database(dialect))
        let events = (0..<7).map { event("e:\($0)", at: Int64($0 / 2)) }  // ties on `at`
        _ = try store.replace(events, for: "u", originals: ["o1"], now: 1)
        var seen: [String] = []
        var cursor: (at: Int64, id: Int64)?
        while true {
            let page = try store.page(for: "u", limit: 3, before: cursor)
            seen += page.map(\.key)
            guard page.count == 3, let last = page.last else { break }
            cursor = (last.at, last.id)
        }
        #expect(seen == ["e:6", "e:5", "e:4", "e:3", "e:2", "e:1", "e:0"])
    }

    /// More new events than one insert writes: each is told to `inserted` in order, with the id
    /// its row has, and two keys differing only in case are two events.
    @Test(arguments: await testDialects())
    func manyNewEventsEachHaveTheirOwnRowsID(dialect: Database.Dialect) async throws {
        let store = EventStore(try await database(dialect))
        let count = EventStore.insertedPerStatement * 2 + 3
        let events = (0..<count).map { event("e:\($0)", at: Int64($0)) } + [event("E:0", at: 100)]
        var told: [(key: String, id: Int64)] = []
        let changes = try store.replace(events, for: "u", originals: ["o1"], now: 7) { told.append(($0.key, $0.id)) }
        #expect(changes.added == count + 1)
        #expect(told.map(\.key) == events.map(\.key))
        let stored = try store.page(for: "u", limit: 100, before: nil)
        #expect(Set(told.map(\.id)).count == count + 1)
        #expect(
            Dictionary(uniqueKeysWithValues: stored.map { ($0.key, $0.id) })
                == Dictionary(uniqueKeysWithValues: told.map { ($0.key, $0.id) }))
    }
}
