import DatabaseEngine
import Entitlements
import ReceiptTesting
import Testing

@testable import Storage

@Suite("A subscriber's settle")
struct ReceiptStoreSubscriberTests {
    /// Sent unanswered, a settle knows the version it writes from the snapshot's fingerprint; when
    /// it loses all the same, its transaction fails with ``StorageError/lostCompareAndSet`` (on
    /// PostgreSQL raised by the server, so nothing after it can commit) and nothing of it stays.
    @Test(arguments: await testDialects())
    func aSettleUnansweredKnowsItsVersionAndFailsItsTransactionWhenItLoses(dialect: Database.Dialect) async throws {
        let db = try await migratedDatabase(dialect)
        let store = ReceiptStore(db)
        let purchase = Purchase(transactionID: "t1", originalTransactionID: "o1", productID: "monthly", purchaseDate: 1000)
        let facts = VerifiedFacts(environment: .production, purchases: [Stated(purchase, bundleID: "com.x", rawJSON: "{}")])
        _ = try store.save(facts, for: "alice", now: 10)  // facts revision 1, version 0
        let rendering = { (version: Int64) in
            DocumentStore.Rendering(version: version, json: Array(#"{"v":\#(version)}"#.utf8), cut: 5, settings: "s")
        }
        let settle = { (hash: String, stateHash: String?, version: Int64, now: Int64) in
            try db.transaction {
                let after = try store.settleUnanswered(
                    "alice", hash: hash, stateHash: stateHash, derivedFrom: 1, version: version, now: now,
                    document: rendering(version + (stateHash == hash ? 0 : 1)), summaryUntil: 700)
                // Written after it in the same transaction: gone with it when it loses.
                try store.log(
                    VerificationLogEntry(
                        appUserID: "alice", environment: .production, appleStatus: 0, outcome: "valid", attempts: 1, latencyMs: 1),
                    at: now)
                return after
            }
        }
        let row = { try db.scalarText("SELECT version || ' ' || state_hash || ' ' || document FROM subscribers") }
        let logged = { try db.scalarInt("SELECT count(*) FROM verifications") }
        #expect(try settle("a", nil, 0, 11) == 1)
        #expect(try settle("a", "a", 1, 12) == 1)  // the same fingerprint: no new version
        #expect(try row() == #"1 a {"v":1}"#)
        #expect(try logged() == 2)
        let error = #expect(throws: StorageError.self) { try settle("b", "a", 0, 13) }  // read before version 1
        #expect(error?.sqlState == StorageError.lostCompareAndSet && error?.lostToAnotherSettle == true)
        #expect(try row() == #"1 a {"v":1}"#)
        #expect(try logged() == 2)
        // The connection goes on: the next transaction commits.
        #expect(try settle("c", "a", 1, 14) == 2)
        #expect(try row() == #"2 c {"v":2}"#)
    }
}
