import DatabaseEngine
import Entitlements
import ReceiptTesting
import Testing

@testable import Storage

@Suite("Documents kept in their rows")
struct DocumentStoreTests {
    private static let json = Array(#"{"app_user_id":"ann","request_date":"","version":2}"#.utf8)
    private static let cut = 37  // after `"request_date":"`

    /// Ann, saved once and settled at version 1 (revision 1) at 100; her document kept at 100,
    /// true until 500, under the settings "s1".
    private func settled(_ dialect: Database.Dialect) async throws -> Database {
        let db = try await migratedDatabase(dialect)
        try db.transaction {
            _ = try ReceiptStore(db).save(
                VerifiedFacts(
                    environment: .sandbox,
                    purchases: [
                        Stated(
                            Purchase(
                                transactionID: "t1", originalTransactionID: "o1", productID: "monthly", purchaseDate: 10,
                                expiresDate: 500, environment: .sandbox),
                            bundleID: "b", rawJSON: "{}")
                    ]), for: "ann", now: 100)
            _ = try ReceiptStore(db).settle("ann", hash: "h", derivedFrom: 1, version: 0, now: 100, summaryUntil: 500)
            try ProductStateStore(db).replace([], for: "ann")
            try DocumentStore(db).keep(
                "ann", DocumentStore.Rendering(version: 1, json: Self.json, cut: Self.cut, settings: "s1"), derivedAt: 100)
        }
        return db
    }

    @Test(arguments: await testDialects())
    func aDocumentIsReadAsItWasKeptWhileItIsTrue(_ dialect: Database.Dialect) async throws {
        let db = try await settled(dialect)
        let store = DocumentStore(db)
        let kept = DocumentStore.Kept(version: 1, json: Self.json, cut: Self.cut, derivedAt: 100, until: 500)
        #expect(try store.kept("ann", settings: "s1", now: 100) == kept)
        #expect(try store.kept("ann", settings: "s1", now: 499) == kept)
        #expect(Array(Self.json[..<Self.cut]) == Array(#"{"app_user_id":"ann","request_date":""#.utf8))
        // Before it was derived, from the instant it may read differently, under other settings,
        // and for anyone else (an alias, another spelling), it is not read.
        #expect(try store.kept("ann", settings: "s1", now: 99) == nil)
        #expect(try store.kept("ann", settings: "s1", now: 500) == nil)
        #expect(try store.kept("ann", settings: "s2", now: 200) == nil)
        #expect(try store.kept("Ann", settings: "s1", now: 200) == nil)
        #expect(try store.kept("nobody", settings: "s1", now: 200) == nil)
    }

    @Test(arguments: await testDialects())
    func aChangeOfFactsClearsTheDocumentAndAStaleVersionKeepsNone(_ dialect: Database.Dialect) async throws {
        let db = try await settled(dialect)
        try db.transaction { try ReceiptStore(db).factsChanged(["ann"], at: 200) }
        #expect(try DocumentStore(db).kept("ann", settings: "s1", now: 300) == nil)
        // Nothing of it is left in the row (it may name an alias being erased).
        #expect(try db.scalarInt("SELECT count(*) FROM subscribers WHERE document IS NULL AND document_settings IS NULL") == 1)
        // Behind its facts, no document is kept, whatever version it names.
        try db.transaction {
            try DocumentStore(db).keep(
                "ann", DocumentStore.Rendering(version: 1, json: Self.json, cut: Self.cut, settings: "s1"), derivedAt: 300)
        }
        #expect(try db.scalarInt("SELECT count(*) FROM subscribers WHERE document IS NULL") == 1)
        // Settled again at version 2: a document of version 1 is refused, one of version 2 kept.
        try db.transaction {
            _ = try ReceiptStore(db).settle("ann", hash: "h2", derivedFrom: 2, version: 1, now: 300, summaryUntil: 900)
            try ProductStateStore(db).replace([], for: "ann")
            try DocumentStore(db).keep(
                "ann", DocumentStore.Rendering(version: 1, json: Self.json, cut: Self.cut, settings: "s1"), derivedAt: 300)
        }
        #expect(try DocumentStore(db).kept("ann", settings: "s1", now: 300) == nil)
        try db.transaction {
            try DocumentStore(db).keep(
                "ann", DocumentStore.Rendering(version: 2, json: Self.json, cut: Self.cut, settings: "s1"), derivedAt: 300)
        }
        #expect(try DocumentStore(db).kept("ann", settings: "s1", now: 300)?.until == 900)
    }

    /// A settle writes the document in its own statement, only when it shows the version written.
    @Test(arguments: await testDialects())
    func aSettleKeepsTheDocumentOfTheVersionItWrites(_ dialect: Database.Dialect) async throws {
        let db = try await settled(dialect)
        try db.transaction { try ReceiptStore(db).factsChanged(["ann"], at: 200) }
        let rendering = { (version: Int64) in
            DocumentStore.Rendering(version: version, json: Self.json, cut: Self.cut, settings: "s1")
        }
        // A new fingerprint: version 2, but the document says 1: none kept.
        try db.transaction {
            _ = try ReceiptStore(db).settle(
                "ann", hash: "h2", derivedFrom: 2, version: 1, now: 200, document: rendering(1), summaryUntil: 900)
            try ProductStateStore(db).replace([], for: "ann")
        }
        #expect(try DocumentStore(db).kept("ann", settings: "s1", now: 300) == nil)
        try db.transaction { try ReceiptStore(db).factsChanged(["ann"], at: 300) }
        // The same fingerprint: still version 2, which it shows: kept, derived at the settle's time.
        try db.transaction {
            #expect(
                try ReceiptStore(db).settle(
                    "ann", hash: "h2", derivedFrom: 3, version: 2, now: 300, document: rendering(2), summaryUntil: 900) == 2)
            try ProductStateStore(db).replace([], for: "ann")
        }
        let kept = try #require(try DocumentStore(db).kept("ann", settings: "s1", now: 300))
        #expect(kept == DocumentStore.Kept(version: 2, json: Self.json, cut: Self.cut, derivedAt: 300, until: 900))
    }

    /// The bytes come back as written: a name in two spellings, and text that is not ASCII.
    @Test(arguments: await testDialects())
    func theBytesComeBackExactly(_ dialect: Database.Dialect) async throws {
        let db = try await settled(dialect)
        let json = Array(#"{"a":"Zoe\#u{0308} Zo\#u{00EB} 日本 \#u{1F600}","request_date":"","v":1}"#.utf8)
        let cut = json.count - 9
        try db.transaction {
            try DocumentStore(db).keep(
                "ann", DocumentStore.Rendering(version: 1, json: json, cut: cut, settings: "s1"), derivedAt: 100)
        }
        let kept = try #require(try DocumentStore(db).kept("ann", settings: "s1", now: 100))
        #expect(kept.json == json && kept.cut == cut)
    }
}
