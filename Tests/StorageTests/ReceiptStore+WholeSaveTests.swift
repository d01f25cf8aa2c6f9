import DatabaseEngine
import Entitlements
import ReceiptTesting
import Testing

@testable import Storage

/// A save sent whole (``ReceiptStore/saveWhole(_:for:begun:now:)``) as a group commit runs it: each
/// save of the transaction in a savepoint of its own. Its rows match the reading save's in
/// ReceiptCoreTests (`SubscriberStateWholeSaveTests`); here, when its outcome is known and what a
/// refusal leaves.
@Suite("ReceiptStore: a save sent whole")
struct ReceiptStoreWholeSaveTests {
    private static func facts(_ original: String) -> VerifiedFacts {
        VerifiedFacts(
            environment: .sandbox,
            purchases: [
                Stated(
                    Purchase(
                        transactionID: original + ".1", originalTransactionID: original, productID: "monthly",
                        purchaseDate: 1_000, expiresDate: 2_000, environment: .sandbox),
                    bundleID: "b", rawJSON: "{}")
            ])
    }

    /// Each save is answered once the round trip that carries it has (its savepoint's release),
    /// never before; a person erased after the save's work began is refused by the server
    /// (SQLSTATE ``ErasedIDs/erasedMeanwhileState``), which undoes that save alone and never
    /// answers it; the others commit.
    @Test(arguments: await testDialects().filter { $0 == .postgresql })
    func eachSaveOfAGroupIsAnsweredByItsOwnRoundTrip(_ dialect: Database.Dialect) async throws {
        let db = try await migratedDatabase(dialect)
        try db.transaction { () throws -> Void in try ErasedIDs(db).record(["gone"], at: 5_000) }
        let store = ReceiptStore(db)
        var sent: [ReceiptStore.SentSave] = []
        var refusal: (any Error)?
        try db.transaction { () throws -> Void in
            try db.savepoint { () throws -> Void in
                sent.append(try store.saveWhole(Self.facts("o1"), for: "ann", begun: 4_000, now: 6_000))
                #expect(sent[0].outcome == nil)
            }
            #expect(sent[0].outcome?.changes == 2 && sent[0].outcome?.changed == ["ann"])
            do {
                try db.savepoint { () throws -> Void in
                    sent.append(try store.saveWhole(Self.facts("o2"), for: "gone", begun: 4_000, now: 6_000))
                }
            } catch {
                refusal = error
            }
            try db.savepoint { () throws -> Void in
                sent.append(try store.saveWhole(Self.facts("o1"), for: "ben", begun: 4_000, now: 7_000))
            }
        }
        #expect((refusal as? StorageError)?.sqlState == ErasedIDs.erasedMeanwhileState)
        #expect(ErasedIDs.meaning(of: refusal!) is ErasedIDs.ErasedMeanwhile)
        #expect(sent[1].outcome == nil)
        // Taking o1 from ann: its holder row and transfer, no fact row new.
        #expect(sent[2].outcome?.changes == 1 && sent[2].outcome?.changed == ["ben", "ann"])
        #expect(try store.owner(of: "o1") == "ben")
        #expect(try store.owner(of: "o2") == nil)
        #expect(try !store.isSubscriber("gone"))
        #expect(try db.scalarInt("SELECT count(*) FROM changes") == 3)  // ann; ben, ann
    }
}
