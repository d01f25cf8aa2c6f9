import Analytics
import DatabaseEngine
import Entitlements
import ReceiptTesting
import Testing

@testable import Storage

/// Refund requests as Apple told them: recorded once per notification, an answer recorded once
/// (a failed one replaced, a sent one never), read with their purchase's holder, exported with
/// them and erased with the purchase, after which an answer writes nothing back.
@Suite("Refund request store")
struct RefundRequestStoreTests {
    @Test(arguments: await testDialects())
    func requestsAnswersAndTheirHolder(dialect: Database.Dialect) async throws {
        let db = try await migratedDatabase(dialect)
        let facts = VerifiedFacts(
            environment: .production,
            purchases: [
                Stated(
                    Purchase(transactionID: "t1", originalTransactionID: "o1", productID: "coins", purchaseDate: 1000),
                    bundleID: "com.x", rawJSON: "{}")
            ])
        _ = try ReceiptStore(db).save(facts, for: "rhea", now: 1)
        let store = RefundRequestStore(db)
        #expect(
            try store.record(
                notificationID: 7, type: "CONSUMPTION_REQUEST", originalTransactionID: "o1", transactionID: "t1", at: 50))
        // Delivered again, or a type this table does not keep: nothing.
        #expect(
            !(try store.record(
                notificationID: 7, type: "CONSUMPTION_REQUEST", originalTransactionID: "o1", transactionID: "t1", at: 50)))
        #expect(
            !(try store.record(notificationID: 8, type: "DID_RENEW", originalTransactionID: "o1", transactionID: "t1", at: 60)))
        #expect(
            try store.record(notificationID: 9, type: "REFUND_DECLINED", originalTransactionID: "o1", transactionID: "t1", at: 70)
        )
        // A failed answer, then one sent: the holder is told each time; a second sent one changes nothing.
        #expect(try store.answered(notificationID: 7, answer: "unavailable", at: nil) == "rhea")
        #expect(try store.answered(notificationID: 7, answer: "sent", at: 55) == "rhea")
        #expect(try store.answered(notificationID: 7, answer: "sent", at: 58) == nil)
        #expect(try store.answered(notificationID: 9, answer: "sent", at: 58) == nil)  // not a request

        let held = try AnalyticsStore(db).holdings(of: ["rhea"]).refundRequests.sorted { $0.event.at < $1.event.at }
        #expect(
            held == [
                .init(
                    originalTransactionID: "o1",
                    event: .init(transactionID: "t1", kind: .requested, at: 50, answeredAt: 55, answer: "sent")),
                .init(
                    originalTransactionID: "o1",
                    event: .init(transactionID: "t1", kind: .declined, at: 70, answeredAt: nil, answer: nil)),
            ])

        // Exported with the person, erased with the purchase; an answer after that writes nothing.
        let person = try #require(try PersonalData(db).person("rhea"))
        let section = try #require(PersonalData.sections(of: person).first { $0.table == "refund_requests" })
        #expect(try PersonalData(db).page(section, after: nil, limit: 10).rows.count == 2)
        let erased = try Erasure(db).erase("rhea", by: "test", at: 100)
        #expect(erased.rows["refund_requests"] == 2)
        #expect(try store.answered(notificationID: 7, answer: "sent", at: 120) == nil)
        #expect(try db.scalarInt("SELECT count(*) FROM refund_requests") == 0)
    }
}
