import DatabaseEngine
import Entitlements
import Foundation
import ReceiptTesting
import Testing

@testable import Storage

private func delivery(_ key: String, original: String? = "o1", outcome: String = "received") -> NotificationRecord {
    NotificationRecord(
        dedupeKey: key, version: 2, type: "DID_RENEW", originalTransactionID: original, outcome: outcome, signedAt: 5,
        receivedAt: 10, body: #"{"signedPayload":"…"}"#)
}

private func purchase(_ id: String, stated: Int64?, cancelled: Int64? = nil, autoRenew: Bool = true) -> VerifiedFacts {
    VerifiedFacts(
        environment: .sandbox,
        purchases: [
            Stated(
                Purchase(
                    transactionID: id, originalTransactionID: "o1", productID: "monthly", purchaseDate: 1000,
                    expiresDate: 9000, cancellationDate: cancelled, environment: .sandbox),
                bundleID: "com.x",
                rawJSON: #"{"transactionId":"\#(id)","revocationDate":\#(cancelled.map(String.init) ?? "null")}"#)
        ],
        renewals: [
            Stated(
                Renewal(originalTransactionID: "o1", autoRenewStatus: autoRenew, environment: .sandbox),
                rawJSON: #"{"autoRenewStatus":\#(autoRenew ? 1 : 0)}"#)
        ], statedAt: stated)
}

@Suite("Notification store")
struct NotificationStoreTests {
    @Test(arguments: await testDialects())
    func aDeliveryIsStoredOnceByItsKey(dialect: Database.Dialect) async throws {
        let db = try await migratedDatabase(dialect)
        let store = NotificationStore(db)
        let id = try #require(try store.insert(delivery("uuid-1")))
        #expect(try store.insert(delivery("uuid-1")) == nil)
        try store.finish(id, outcome: "applied", appUserID: "u")
        let stored = try #require(try store.find(dedupeKey: "uuid-1"))
        #expect(stored.id == id && stored.outcome == "applied" && stored.appUserID == "u" && stored.signedAt == 5)
        #expect(try db.scalarInt("SELECT count(*) FROM notifications") == 1)
    }

    @Test(arguments: await testDialects())
    func latestPagesNewestFirst(dialect: Database.Dialect) async throws {
        let store = NotificationStore(try await migratedDatabase(dialect))
        for i in 0..<5 { _ = try store.insert(delivery("k\(i)")) }
        let first = try store.latest(limit: 3)
        #expect(first.map(\.dedupeKey) == ["k4", "k3", "k2"])
        #expect(try store.latest(limit: 3, before: first.last?.id).map(\.dedupeKey) == ["k1", "k0"])
    }

    @Test(arguments: await testDialects())
    func olderStatementsNeverOverwriteNewerOnes(dialect: Database.Dialect) async throws {
        let db = try await migratedDatabase(dialect)
        let receipts = ReceiptStore(db)
        #expect(try receipts.save(purchase("t1", stated: 200, cancelled: 150, autoRenew: false), for: "u", now: 300).changes == 3)
        // Signed at 100, delivered after the refund signed at 200: nothing changes.
        #expect(try receipts.save(purchase("t1", stated: 100), for: "u", now: 400).changes == 0)
        let subscriber = try #require(try receipts.subscriber("u"))
        #expect(subscriber.purchases.first?.fact.cancellationDate == 150)
        #expect(subscriber.renewals.map(\.fact.renewal.autoRenewStatus) == [false])
        // A later statement applies (a refund reversed).
        #expect(try receipts.save(purchase("t1", stated: 250), for: "u", now: 500).changes == 2)
        #expect(try receipts.subscriber("u")?.purchases.first?.fact.cancellationDate == nil)
    }

    @Test(arguments: await testDialects())
    func factsWithoutOwnerJoinTheUserWhoTakesThePurchaseAndWaitingDeliveriesAttach(dialect: Database.Dialect) async throws {
        let db = try await migratedDatabase(dialect)
        let receipts = ReceiptStore(db)
        let notifications = NotificationStore(db)
        let id = try #require(try notifications.insert(delivery("early", outcome: "pending_owner")))
        #expect(try receipts.saveUnowned(purchase("t1", stated: 100, autoRenew: false), now: 100).changes == 2)
        #expect(try receipts.owner(of: "o1") == nil)
        let later = VerifiedFacts(
            environment: .sandbox,
            purchases: [
                Stated(
                    Purchase(
                        transactionID: "t0", originalTransactionID: "o1", productID: "monthly", purchaseDate: 500,
                        expiresDate: 900, environment: .sandbox, appAccountToken: "tok"),
                    bundleID: "com.x", rawJSON: "{}")
            ])
        let saved = try receipts.save(later, for: "ann", now: 200)
        #expect(saved.acquired == ["o1"])
        for original in saved.acquired { try notifications.attachPending(original, to: "ann") }
        let ann = try #require(try receipts.subscriber("ann"))
        #expect(Set(ann.purchases.map(\.fact.transactionID)) == ["t0", "t1"])
        #expect(ann.renewals.first?.fact.renewal.autoRenewStatus == false)
        let attached = try #require(try notifications.latest(limit: 1).first)
        #expect(attached.id == id && attached.outcome == "attached" && attached.appUserID == "ann")
        #expect(try receipts.subscriber(forAccountToken: "tok") == "ann")
        #expect(try receipts.subscriber(forAccountToken: "nobody") == nil)
        // Identifiers are exact bytes: only a UUID (Apple's appAccountToken) may be spelt in
        // either case. Google Play's account id `ANN` or `Tok` names nobody here.
        #expect(try receipts.subscriber(forAccountToken: "ANN") == nil)
        #expect(try receipts.subscriber(forAccountToken: "Tok") == nil)
        let uuid = "6f9619ff-8b86-d011-b42d-00cf4fc964ff"
        var theirs = purchase("t9", stated: 300)
        theirs.purchases[0].fact.originalTransactionID = "o9"
        theirs.renewals = []
        _ = try receipts.save(theirs, for: uuid, now: 300)
        #expect(try receipts.subscriber(forAccountToken: uuid.uppercased()) == uuid)
        #expect(ReceiptStore.isUUID(uuid.uppercased()) && !ReceiptStore.isUUID("ann") && !ReceiptStore.isUUID(uuid + "0"))
    }

    @Test(arguments: await testDialects())
    func applesChangeDateDatesTheHistoryInOrderAndNeverInTheFuture(dialect: Database.Dialect) async throws {
        let receipts = ReceiptStore(try await migratedDatabase(dialect))
        _ = try receipts.save(purchase("t1", stated: 500), for: "u", now: 500)
        var off = purchase("t1", stated: 600, autoRenew: false)
        off.renewalChangedAt = 450  // before the snapshot it replaces: kept after it
        _ = try receipts.save(off, for: "u", now: 600)
        var on = purchase("t1", stated: 700)
        on.renewalChangedAt = 650
        _ = try receipts.save(on, for: "u", now: 700)
        var late = purchase("t1", stated: 800, autoRenew: false)
        late.renewalChangedAt = 10_000  // after now: now
        _ = try receipts.save(late, for: "u", now: 800)
        #expect(try receipts.subscriber("u")?.renewals.map(\.fact.observedAt) == [500, 500, 650, 800])
    }

    @Test func aDurableTransactionCommitsAndRestoresNormalSync() throws {
        let dir = NSTemporaryDirectory() + "durable-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let db = try Database(path: dir + "/db.sqlite")
        try db.execute("CREATE TABLE t (x INTEGER)")
        try db.transaction(durable: true) {
            #expect(try db.scalarInt("PRAGMA synchronous") == 2)  // FULL
            try db.execute("INSERT INTO t VALUES (1)")
        }
        #expect(try db.scalarInt("PRAGMA synchronous") == 1)  // NORMAL
        #expect(try Database(path: dir + "/db.sqlite").scalarInt("SELECT count(*) FROM t") == 1)
    }
}
