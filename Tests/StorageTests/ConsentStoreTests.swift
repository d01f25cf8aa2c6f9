import DatabaseEngine
import Entitlements
import ReceiptTesting
import Testing

@testable import Storage

/// Withdrawn consent to share consumption data, by Apple Account: found from a transaction's own
/// `appTransactionId` or its holder's AppTransactions, exported with the person, and kept when
/// the person is erased.
@Suite("Consent store")
struct ConsentStoreTests {
    @Test(arguments: await testDialects())
    func aWithdrawalIsFoundByTheTransactionOrItsHolder(dialect: Database.Dialect) async throws {
        let db = try await migratedDatabase(dialect)
        let store = ReceiptStore(db)
        func purchase(_ id: String, app: String?) -> VerifiedFacts {
            VerifiedFacts(
                environment: .production,
                purchases: [
                    Stated(
                        Purchase(
                            transactionID: id, originalTransactionID: id, productID: "coins", purchaseDate: 1000,
                            appTransactionID: app),
                        bundleID: "com.x", rawJSON: #"{"id":"\#(id)"}"#)
                ])
        }
        _ = try store.save(purchase("t1", app: "701"), for: "rita", now: 1)
        _ = try store.save(purchase("t2", app: nil), for: "rita", now: 1)  // verifyReceipt's: no appTransactionId
        _ = try store.save(purchase("t3", app: "703"), for: "cora", now: 1)
        let consent = ConsentStore(db)
        #expect(try consent.rescinded(forTransaction: "t1") == nil)
        #expect(
            try consent.rescind(appTransactionID: "701", bundleID: "com.x", environment: "production", at: 50, notificationID: 9))
        // Delivered again: the first stays.
        #expect(
            !(try consent.rescind(
                appTransactionID: "701", bundleID: "com.x", environment: "production", at: 60, notificationID: 10)))
        #expect(try consent.rescinded(forTransaction: "t1") == 50)
        #expect(try consent.person(of: "701") == "rita")
        // t2 states no account; its holder's AppTransaction names it.
        #expect(try consent.rescinded(forTransaction: "t2") == nil)
        _ = try AppTransactionStore(db).save(
            AppTransactionRecord(
                appUserID: "rita", appTransactionID: "701", bundleID: "com.x", environment: "production",
                originalApplicationVersion: "1.0", originalPurchaseDate: 1, originalPlatform: "iOS", rawJSON: "{}"), now: 2)
        #expect(try consent.rescinded(forTransaction: "t2") == 50)
        #expect(try consent.rescinded(forTransaction: "t3") == nil)
        #expect(try consent.person(of: "799") == nil)

        // Exported with the person; kept through their erasure.
        let person = try #require(try PersonalData(db).person("rita"))
        let section = try #require(PersonalData.sections(of: person).first { $0.table == "consumption_consent_rescinded" })
        let rows = try PersonalData(db).page(section, after: nil, limit: 10).rows
        #expect(rows.count == 1 && rows.first?.first { $0.column == "app_transaction_id" }?.value == .text("701"))
        let cora = try #require(try PersonalData(db).person("cora"))
        let theirs = try #require(PersonalData.sections(of: cora).first { $0.table == "consumption_consent_rescinded" })
        #expect(try PersonalData(db).page(theirs, after: nil, limit: 10).rows.isEmpty)
        // Their purchases' Finish Transaction calls are theirs too: exported, and erased with them.
        let calls = AppStoreCallStore(db)
        try calls.enqueue(.finishTransaction, subject: "t1", bundleID: "com.x", environment: "production", now: 3)
        try calls.enqueue(.finishTransaction, subject: "t3", bundleID: "com.x", environment: "production", now: 3)
        let finishes = try #require(PersonalData.sections(of: person).first { $0.table == "app_store_calls" })
        #expect(try PersonalData(db).page(finishes, after: nil, limit: 10).rows.count == 1)
        _ = try Erasure(db).erase("rita", by: "test", at: 70)
        #expect(try db.scalarInt("SELECT count(*) FROM consumption_consent_rescinded") == 1)
        #expect(try db.scalarText("SELECT min(subject) FROM app_store_calls") == "t3")
        #expect(try db.scalarInt("SELECT count(*) FROM app_store_calls") == 1)
    }
}
