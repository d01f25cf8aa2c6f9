import Entitlements
import Foundation
import Identifiers
import ReceiptTesting
import Testing

@testable import DatabaseEngine
@testable import Storage

@Suite("Copying SQLite into PostgreSQL", .enabled("PostgreSQL is not installed here") { await PostgresTestServer.isAvailable() })
struct DataCopyTests {
    private func facts(_ n: Int) -> VerifiedFacts {
        VerifiedFacts(
            environment: .sandbox,
            purchases: [
                Stated(
                    Purchase(
                        transactionID: "t\(n)", originalTransactionID: "o\(n)", productID: "monthly", purchaseDate: 1000,
                        originalPurchaseDate: 1000, expiresDate: 2000, environment: .sandbox, subscriptionGroupID: "g"),
                    bundleID: "com.x", rawJSON: #"{"transaction_id":"t\#(n)","note":"ünï ' \" \\"}"#)
            ],
            renewals: [
                Stated(
                    Renewal(originalTransactionID: "o\(n)", autoRenewStatus: n % 2 == 0, environment: .sandbox),
                    rawJSON: #"{"o":\#(n)}"#)
            ],
            latestReceipt: "QUJD\(n)")
    }

    /// An SQLite database with rows in every kind of table: 30 users, a transfer, verifications,
    /// notifications, events and webhook deliveries.
    private func source() throws -> Database {
        let db = try migratedDatabase()
        let receipts = ReceiptStore(db)
        for n in 0..<30 {
            _ = try receipts.save(facts(n), for: "user\(n)", now: Int64(n))
            try receipts.log(
                VerificationLogEntry(
                    appUserID: "user\(n)", environment: .sandbox, appleStatus: 0, outcome: "valid", attempts: 1, latencyMs: 5),
                at: Int64(n))
            _ = try receipts.settle("user\(n)", hash: "h\(n)", derivedFrom: 1, version: 0, now: Int64(n))
        }
        _ = try receipts.save(facts(3), for: "thief", now: 99)
        _ = try NotificationStore(db).insert(
            NotificationRecord(
                dedupeKey: "k", version: 2, type: "DID_RENEW", originalTransactionID: "o1", outcome: "applied", signedAt: 5,
                receivedAt: 10, body: "{}"))
        _ = try EventStore(db).replace(
            [
                EventRecord(
                    key: "renewal:t1", type: "renewal", at: 5, productID: "monthly", originalTransactionID: "o1",
                    transactionID: "t1", factsJSON: "{}")
            ], for: "user1", originals: ["o1"], now: 7)
        try WebhookStore(db).enqueue(
            WebhookMessage(
                id: "evt_1", appUserID: "user1", version: 1, type: "renewal", bundleID: "com.x", body: "{}", createdAt: 7),
            to: ["crm", "billing"], now: 7)
        return db
    }

    @Test func everyRowArrivesOnceAndARunAgainCopiesNothing() async throws {
        let sqlite = try source()
        let postgres = try Database(postgresURL: try await PostgresTestServer.freshDatabase(migrated: true))
        let first = try DataCopy(from: sqlite, to: postgres, page: 7).run()
        #expect(first.allSatisfy { $0.matches }, "\(first.filter { !$0.matches })")
        #expect(first.first { $0.name == "subscribers" }?.copied == 31)
        #expect(first.first { $0.name == "webhook_deliveries" }?.copied == 2)
        // The planner has the copied tables' statistics from the first query on.
        let unanalyzed = try postgres.scalarInt(
            "SELECT count(*) FROM pg_stat_user_tables WHERE last_analyze IS NULL AND relname IN ('transactions', 'ownership')")
        #expect(unanalyzed == 0)
        #expect(try ReceiptStore(postgres).subscriber("thief") == (try ReceiptStore(sqlite).subscriber("thief")))
        #expect(try ReceiptStore(postgres).subscriber("user7") == (try ReceiptStore(sqlite).subscriber("user7")))
        let again = try DataCopy(from: sqlite, to: postgres).run()
        #expect(again.allSatisfy { $0.matches && $0.copied == 0 })
        // New rows take ids past the copied ones.
        try ReceiptStore(postgres).log(
            VerificationLogEntry(appUserID: "x", environment: nil, appleStatus: nil, outcome: "valid", attempts: 1, latencyMs: 1),
            at: 100)
        #expect(try postgres.scalarInt("SELECT max(id) FROM verifications") == 31)
    }

    @Test func aCopyCutOffIsFinishedByRunningItAgainAndTheComparisonSeesADifference() async throws {
        let sqlite = try source()
        let postgres = try Database(postgresURL: try await PostgresTestServer.freshDatabase(migrated: true))
        let cut = try DataCopy(from: sqlite, to: postgres, page: 4).run(limit: 50)
        #expect(cut.reduce(0) { $0 + $1.copied } == 50)
        #expect(!cut.allSatisfy { $0.matches })
        let finished = try DataCopy(from: sqlite, to: postgres, page: 4).run()
        #expect(finished.allSatisfy { $0.matches })
        // A row changed in the target after the copy: its table no longer matches.
        try postgres.execute("UPDATE transactions SET raw_json = '{}' WHERE transaction_id = 't5'")
        let compared = try DataCopy(from: sqlite, to: postgres).run()
        #expect(compared.filter { !$0.matches }.map(\.name) == ["transactions"])
    }
}

@Suite("What copy-data copies")
struct DataCopyTablesTests {
    /// A table a migration adds is copied, or said to be rebuilt: never silently left behind (the
    /// consent and call-queue tables of issue 43 were, until this test).
    @Test func everyTableIsCopiedOrRebuilt() throws {
        let db = try migratedDatabase()
        let q = try db.prepare(
            "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name <> 'schema_migrations'")
        var tables: Set<String> = []
        while try q.step() { tables.insert(q.text(0)!) }
        #expect(tables.subtracting(DataCopy.rebuilt) == Set(DataCopy.tables))
        #expect(DataCopy.tables.count == Set(DataCopy.tables).count)
    }
}
