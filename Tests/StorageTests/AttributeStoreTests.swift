import DatabaseEngine
import ReceiptTesting
import Testing

@testable import Storage

/// A person's attributes: the newer write wins, an alias's join its subscriber's, an erased
/// person's stay gone.
@Suite("Attribute store")
struct AttributeStoreTests {
    @Test(arguments: await testDialects())
    func theNewerWriteOfANameWinsAndNullUnsetsIt(dialect: Database.Dialect) async throws {
        let db = try await migratedDatabase(dialect)
        let store = AttributeStore(db)
        try store.set([.init(name: "$email", value: "new@example.com", updatedAt: 20)], for: "u", began: 0, now: 1)
        // An older write arriving later changes nothing; a newer one does; null unsets.
        try store.set([.init(name: "$email", value: "old@example.com", updatedAt: 10)], for: "u", began: 0, now: 2)
        #expect(try store.attributes(of: "u") == [.init(name: "$email", value: "new@example.com", updatedAt: 20)])
        try store.set(
            [.init(name: "$email", value: nil, updatedAt: 30), .init(name: "tier", value: "gold", updatedAt: 30)], for: "u",
            began: 0, now: 3)
        #expect(try store.attributes(of: "u") == [.init(name: "tier", value: "gold", updatedAt: 30)])
        try store.set([.init(name: "$email", value: "older@example.com", updatedAt: 25)], for: "u", began: 0, now: 4)
        #expect(try store.attributes(of: "u").map(\.name) == ["tier"])
    }

    @Test(arguments: await testDialects())
    func anAliasesAttributesJoinItsSubscriberAndAnErasureTakesThem(dialect: Database.Dialect) async throws {
        let db = try await migratedDatabase(dialect)
        let store = AttributeStore(db)
        try store.set([.init(name: "$email", value: "anon@example.com", updatedAt: 1)], for: "anon", began: 0, now: 1)
        try store.set(
            [.init(name: "$email", value: "ana@example.com", updatedAt: 1), .init(name: "tier", value: "gold", updatedAt: 1)],
            for: "ana", began: 0, now: 1)
        try ReceiptStore(db).addSubscriber("ana", now: 1)
        _ = try Merge(db).merge("anon", into: "ana", at: 2)
        // The subscriber keeps its own value of a name both had.
        #expect(try store.attributes(of: "anon").map(\.value) == ["ana@example.com", "gold"])
        #expect(try db.scalarInt("SELECT count(*) FROM attributes WHERE app_user_id = 'anon'") == 0)
        _ = try Erasure(db).erase("ana", by: "test", at: 3)
        #expect(try db.scalarInt("SELECT count(*) FROM attributes") == 0)
        // A write that began before the erasure writes nothing back.
        #expect(throws: ErasedIDs.ErasedMeanwhile.self) {
            try store.set([.init(name: "tier", value: "gold", updatedAt: 5)], for: "ana", began: 2, now: 4)
        }
        #expect(try db.scalarInt("SELECT count(*) FROM attributes") == 0)
    }
}
