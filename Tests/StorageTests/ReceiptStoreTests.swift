import Foundation
import Testing

@testable import Storage

/// An in-memory database with the project's migrations applied.
private func migratedDatabase() throws -> Database {
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path
    let db = try Database(path: ":memory:")
    _ = try Migrator(migrations: try Migration.load(from: root + "/Migrations")).migrate(db)
    return db
}

/// Every row of every receipt table, as text, to compare states.
private func snapshot(_ db: Database) throws -> [String] {
    var rows: [String] = []
    for table in [
        "subscribers", "transactions", "pending_renewal_info", "renewal_history", "latest_receipts", "ownership",
        "ownership_transfers", "events",
    ] {
        let columns = try db.prepare("SELECT * FROM \(table) ORDER BY 1, 2")
        while try columns.step() {
            rows.append(table + ": " + (0..<24).map { columns.text($0) ?? "∅" }.joined(separator: "|"))
        }
    }
    return rows
}

private func receipt(cancelled: Int64? = nil) -> VerifiedReceiptRecord {
    VerifiedReceiptRecord(
        environment: "sandbox",
        transactions: [
            TransactionRecord(
                transactionID: "t1", originalTransactionID: "o1", productID: "monthly", bundleID: "com.x", environment: "sandbox",
                purchaseDate: 1000, originalPurchaseDate: 1000, expiresDate: 2000, isTrialPeriod: true,
                subscriptionGroupID: "g", rawJSON: #"{"transaction_id":"t1"}"#),
            TransactionRecord(
                transactionID: "t2", originalTransactionID: "o1", productID: "monthly", bundleID: "com.x", environment: "sandbox",
                purchaseDate: 2000, originalPurchaseDate: 1000, expiresDate: 3000, cancellationDate: cancelled,
                subscriptionGroupID: "g",
                rawJSON: cancelled == nil ? #"{"transaction_id":"t2"}"# : #"{"transaction_id":"t2","c":1}"#),
            TransactionRecord(
                transactionID: "t3", originalTransactionID: "t3", productID: "lifetime", bundleID: "com.x",
                environment: "sandbox",
                purchaseDate: 1500, rawJSON: #"{"transaction_id":"t3"}"#),
        ],
        renewals: [
            RenewalRecord(
                originalTransactionID: "o1", productID: "monthly", autoRenewProductID: "monthly", autoRenewStatus: true,
                environment: "sandbox", rawJSON: #"{"original_transaction_id":"o1"}"#)
        ],
        latestReceipt: "QUJD")
}

@Suite("Receipt store")
struct ReceiptStoreTests {
    @Test func savesAndReadsBackEveryField() throws {
        let db = try migratedDatabase()
        let store = ReceiptStore(db)
        // 3 transactions, 1 renewal, 2 purchases taking their first holder.
        #expect(try store.save(receipt(), for: "alice", policy: .transfer, now: 10) == .saved(changes: 6))
        let alice = try #require(try store.subscriber("alice"))
        #expect(alice.transactions == receipt().transactions.sorted { ($0.purchaseDate ?? 0) < ($1.purchaseDate ?? 0) })
        #expect(alice.renewalHistory.map(\.record) == receipt().renewals)
        #expect(alice.renewalHistory.map(\.observedAt) == [10])
        #expect(alice.version == 0 && alice.stateHash == nil)
        #expect(
            alice.transfers == [
                TransferRecord(originalTransactionID: "o1", productID: "monthly", from: nil, to: "alice", at: 10),
                TransferRecord(originalTransactionID: "t3", productID: "lifetime", from: nil, to: "alice", at: 10),
            ])
        #expect(try store.subscriber("nobody") == nil)
        #expect(try db.scalarText("SELECT receipt_data FROM latest_receipts WHERE original_transaction_id = 'o1'") == "QUJD")
    }

    @Test func savingTheSameReceiptAgainChangesNothing() throws {
        let db = try migratedDatabase()
        let store = ReceiptStore(db)
        _ = try store.save(receipt(), for: "alice", policy: .transfer, now: 10)
        let before = try snapshot(db)
        #expect(try store.save(receipt(), for: "alice", policy: .transfer, now: 99) == .saved(changes: 0))
        #expect(try snapshot(db) == before)
    }

    @Test func aChangedTransactionIsUpdated() throws {
        let db = try migratedDatabase()
        let store = ReceiptStore(db)
        _ = try store.save(receipt(), for: "alice", policy: .transfer, now: 10)
        _ = try store.save(receipt(cancelled: 2500), for: "alice", policy: .transfer, now: 20)
        let t2 = try #require(try store.subscriber("alice")?.transactions.first { $0.transactionID == "t2" })
        #expect(t2.cancellationDate == 2500)
        #expect(try db.scalarInt("SELECT updated_at FROM transactions WHERE transaction_id = 't2'") == 20)
        #expect(try db.scalarInt("SELECT first_seen_at FROM transactions WHERE transaction_id = 't2'") == 10)
        #expect(try db.scalarInt("SELECT updated_at FROM transactions WHERE transaction_id = 't1'") == 10)
    }

    @Test func transferMovesThePurchasesAndRecordsIt() throws {
        let db = try migratedDatabase()
        let store = ReceiptStore(db)
        _ = try store.save(receipt(), for: "alice", policy: .transfer, now: 10)
        #expect(try store.save(receipt(), for: "bob", policy: .transfer, now: 20) == .saved(changes: 2))
        #expect(try store.subscriber("bob")?.transactions.count == 3)
        #expect(try store.subscriber("alice")?.transactions.isEmpty == true)
        let transfers = try db.prepare(
            "SELECT original_transaction_id, from_app_user_id, to_app_user_id, at FROM ownership_transfers ORDER BY id")
        var rows: [String] = []
        while try transfers.step() { rows.append((0..<4).map { transfers.text($0) ?? "∅" }.joined(separator: " ")) }
        #expect(rows == ["o1 ∅ alice 10", "t3 ∅ alice 10", "o1 alice bob 20", "t3 alice bob 20"])
    }

    @Test func keepRefusesASecondUserAndWritesNothing() throws {
        let db = try migratedDatabase()
        let store = ReceiptStore(db)
        _ = try store.save(receipt(), for: "alice", policy: .keep, now: 10)
        let before = try snapshot(db)
        #expect(try store.save(receipt(cancelled: 2500), for: "bob", policy: .keep, now: 20) == .receiptInUse(heldBy: "alice"))
        #expect(try snapshot(db) == before)
        #expect(try store.subscriber("bob") == nil)
    }

    @Test func theVerificationLogHoldsNoReceipt() throws {
        let db = try migratedDatabase()
        let store = ReceiptStore(db)
        try store.log(
            VerificationLogEntry(
                appUserID: "alice", environment: "sandbox", appleStatus: 0, outcome: "valid", attempts: 2, latencyMs: 31),
            at: 5)
        #expect(
            try db.scalarText("SELECT outcome || ',' || attempts || ',' || latency_ms || ',' || apple_status FROM verifications")
                == "valid,2,31,0")
    }

    @Test func theLogRowCommitsWithTheReceiptEvenWhenKeepRefuses() throws {
        let db = try migratedDatabase()
        let store = ReceiptStore(db)
        let entry = VerificationLogEntry(
            appUserID: "bob", environment: "sandbox", appleStatus: 0, outcome: "valid", attempts: 1, latencyMs: 3)
        _ = try store.save(receipt(), for: "alice", policy: .keep, now: 10, log: entry)
        #expect(try store.save(receipt(), for: "bob", policy: .keep, now: 20, log: entry) == .receiptInUse(heldBy: "alice"))
        #expect(try db.scalarInt("SELECT count(*) FROM verifications") == 2)
        #expect(try store.subscriber("bob") == nil)
    }

    @Test func aChangedRenewalIsAppendedToTheHistory() throws {
        let db = try migratedDatabase()
        let store = ReceiptStore(db)
        _ = try store.save(receipt(), for: "alice", policy: .transfer, now: 10)
        var off = receipt()
        off.renewals[0].autoRenewStatus = false
        off.renewals[0].rawJSON = #"{"original_transaction_id":"o1","auto_renew_status":"0"}"#
        #expect(try store.save(off, for: "alice", policy: .transfer, now: 20) == .saved(changes: 1))
        #expect(try store.save(off, for: "alice", policy: .transfer, now: 30) == .saved(changes: 0))
        let history = try #require(try store.subscriber("alice")).renewalHistory
        #expect(history.map(\.observedAt) == [10, 20])
        #expect(history.map(\.record.autoRenewStatus) == [true, false])
    }

    @Test func theVersionIsACompareAndSet() throws {
        let db = try migratedDatabase()
        let store = ReceiptStore(db)
        _ = try store.save(receipt(), for: "alice", policy: .transfer, now: 10)
        #expect(try store.setState("alice", hash: "a", expected: nil, now: 11) == 1)
        #expect(try store.setState("alice", hash: "b", expected: nil, now: 12) == 1)  // lost the race: unchanged
        #expect(try store.setState("alice", hash: "b", expected: "a", now: 13) == 2)
        #expect(try store.subscriber("alice")?.stateHash == "b")
    }

    @Test func aSavepointInsideACallersTransactionRollsBackAlone() throws {
        let db = try migratedDatabase()
        try db.transaction {
            _ = try ReceiptStore(db).save(receipt(), for: "alice", policy: .transfer, now: 10)
            #expect(throws: StorageError.self) { try db.transaction { try db.execute("INSERT INTO nowhere VALUES (1)") } }
        }
        #expect(try ReceiptStore(db).subscriber("alice")?.transactions.count == 3)
    }
}
