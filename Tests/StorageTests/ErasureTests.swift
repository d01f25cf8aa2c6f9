import Analytics
import DatabaseEngine
import Entitlements
import Foundation
import Identifiers
import ReceiptTesting
import Testing

@testable import Storage

@Suite("Erasing a person's rows")
struct ErasureTests {
    /// User n's purchase; `padding` grows its stored texts, so rewritten rows move in their pages.
    private func facts(_ n: Int, padding: Int = 0) -> VerifiedFacts {
        VerifiedFacts(
            environment: .sandbox,
            purchases: [
                Stated(
                    Purchase(
                        transactionID: "t\(n)", originalTransactionID: "o\(n)", productID: "monthly", purchaseDate: 1000,
                        originalPurchaseDate: 1000, expiresDate: 2000, environment: .sandbox, subscriptionGroupID: "g"),
                    bundleID: "com.x", rawJSON: #"{"transaction_id":"t\#(n)","p":"\#(String(repeating: "p", count: padding))"}"#)
            ],
            renewals: [
                Stated(Renewal(originalTransactionID: "o\(n)", autoRenewStatus: true, environment: .sandbox), rawJSON: "{}")
            ],
            latestReceipt: "RECEIPT-OF-\(n)" + String(repeating: "=", count: padding))
    }

    /// Five users with a purchase each, a verification, a notification and an event each; `thief`
    /// took o3 from user3 (a transfer, and an event about it naming user3); user1 has a webhook.
    private func seeded(_ dialect: Database.Dialect) async throws -> Database {
        let db = try await migratedDatabase(dialect)
        let receipts = ReceiptStore(db)
        for n in 0..<5 {
            _ = try receipts.save(facts(n), for: "user\(n)", now: Int64(n))
            try receipts.log(
                VerificationLogEntry(
                    appUserID: "user\(n)", environment: .sandbox, appleStatus: 0, outcome: "valid", attempts: 1, latencyMs: 5),
                at: Int64(n))
            _ = try NotificationStore(db).insert(
                NotificationRecord(
                    dedupeKey: "k\(n)", version: 2, type: "DID_RENEW", originalTransactionID: "o\(n)", appUserID: "user\(n)",
                    outcome: "applied", signedAt: 5, receivedAt: 10, body: #"{"about":"user\#(n)","o":"o\#(n)"}"#))
            _ = try EventStore(db).replace(
                [
                    EventRecord(
                        key: "purchase:t\(n)", type: "initial_purchase", at: 5, productID: "monthly",
                        originalTransactionID: "o\(n)", transactionID: "t\(n)", factsJSON: #"{"user":"user\#(n)"}"#)
                ], for: "user\(n)", originals: [Identifier("o\(n)")], now: 7)
        }
        // Rollup rows and marks: user1's and user2's rows read back (``marks(ofRows:)``), user3's do not.
        let rollups = RollupStore(db)
        try rollups.saveHolderRows([
            ("user1", "marks f 10, s 20"), ("user2", "marks f 10"), ("user3", "unreadable"),
        ])
        try rollups.addMarks(
            [("user1", "f", 10), ("user1", "s", 20), ("user2", "f", 10), ("user3", "c", 30)].map { user, family, day in
                (user, RollupMark(environment: "sandbox", family: .init(rawValue: family)!, day: day))
            })
        _ = try receipts.save(facts(3), for: "thief", now: 99)
        _ = try EventStore(db).replace(
            [
                EventRecord(
                    key: "transfer:o3", type: "transferred_in", at: 99, productID: "monthly", originalTransactionID: "o3",
                    transactionID: nil, factsJSON: #"{"from_app_user_id":"user3","to_app_user_id":"thief"}"#)
            ], for: "thief", originals: ["o3"], now: 99)
        try WebhookStore(db).enqueue(
            WebhookMessage(
                id: "evt_1", appUserID: "user1", version: 1, type: "renewal", bundleID: "com.x", body: #"{"u":"user1"}"#,
                createdAt: 7),
            to: ["crm"], now: 7)
        try WebhookStore(db).enqueue(
            WebhookMessage(
                id: "evt_t", appUserID: "thief", version: 1, type: "transferred_in", bundleID: "com.x",
                body: #"{"event":{"from_app_user_id":"user3"}}"#, createdAt: 99),
            to: ["crm"], now: 99)
        return db
    }

    private func mentions(of needle: String, in db: Database) throws -> [String] { try rowsMentioning(needle, in: db) }

    /// A stand-in for ReceiptCore's reading of kept rollup rows: "marks f 10, s 20" (sandbox).
    private static func marks(ofRows text: String) -> Set<RollupMark>? {
        guard text.hasPrefix("marks ") else { return nil }
        return Set(
            text.dropFirst(6).split(separator: ", ").map { mark in
                let parts = mark.split(separator: " ")
                return RollupMark(
                    environment: "sandbox", family: .init(rawValue: String(parts[0]))!, day: Int64(parts[1])!)
            })
    }

    /// Erases as `EraseSubscriber` does: the person's rows, then their rows of the rollups.
    private func erase(_ id: String, by asker: String = "cli", at now: Int64 = 500, in db: Database) throws -> Erasure.Outcome {
        try db.transaction {
            var outcome = try Erasure(db).erase(id, by: asker, at: now)
            outcome.rows.merge(try RollupStore(db).forget(outcome.ids, marksOf: Self.marks(ofRows:)), uniquingKeysWith: +)
            return outcome
        }
    }

    private func rollupMarks(_ db: Database) throws -> [String] {
        let q = try db.cached("SELECT app_user_id, family, day FROM rollup_marks ORDER BY app_user_id, family, day").bind([])
        var marks: [String] = []
        while try q.step() { marks.append("\(q.text(0)!) \(q.text(1)!) \(q.int(2))") }
        return marks
    }

    @Test(arguments: await testDialects())
    func everyRowNamingThePersonOrTheirPurchasesGoesOrIsBlanked(_ dialect: Database.Dialect) async throws {
        let db = try await seeded(dialect)
        #expect(try !mentions(of: "user1", in: db).isEmpty)
        let before = try ReceiptStore(db).subscriber("user2")
        let outcome = try erase("user1", by: "key:abc", in: db)
        #expect(outcome.found)
        #expect(try mentions(of: "user1", in: db) == [])
        // Its purchase with everything about it: the receipt string too.
        #expect(try mentions(of: "RECEIPT-OF-1", in: db) == [])
        #expect(try mentions(of: "o1", in: db) == [])
        #expect(outcome.rows["transactions"] == 1 && outcome.rows["subscribers"] == 1 && outcome.rows["webhook_deliveries"] == 1)
        // Their rollup marks, found from their kept rows (no index finds marks by holder); others' stay.
        #expect(outcome.rows["rollup_marks"] == 2 && outcome.rows["rollup_holders"] == 1)
        #expect(try rollupMarks(db) == ["user2 f 10", "user3 c 30"])
        // The notification is a tombstone: its dedupe key still known, nothing of its content left.
        let tombstone = try NotificationStore(db).find(dedupeKey: "k1")
        #expect(tombstone?.outcome == "erased" && tombstone?.body == "" && tombstone?.appUserID == nil)
        #expect(outcome.rows["notifications"] == 1)
        // Other users are untouched; the audit row says how many rows, not whose.
        #expect(try ReceiptStore(db).subscriber("user2") == before)
        #expect(try mentions(of: "user2", in: db).count > 3)
        // The audit row counts the database's rows (the rollups' go in a transaction of their own).
        let rollupRows = outcome.rows.filter { $0.key.hasPrefix("rollup_") }.values.reduce(0, +)
        #expect(
            try db.scalarInt("SELECT rows FROM erasures WHERE by_key = 'key:abc' AND at = 500")
                == Int64(outcome.total - rollupRows))
    }

    @Test(arguments: await testDialects())
    func anotherUsersHistoryOfAPurchaseTheyTookKeepsItsShapeWithoutTheName(_ dialect: Database.Dialect) async throws {
        let db = try await seeded(dialect)
        let thiefEvents = try EventStore(db).page(for: "thief", limit: 10, before: nil).count
        let outcome = try erase("user3", at: 500, in: db)
        #expect(try mentions(of: "user3", in: db) == [])
        #expect(outcome.othersChanged == ["thief"])
        // Rows that do not read back: their holder's marks are looked for among all.
        #expect(outcome.rows["rollup_marks"] == 1)
        #expect(try rollupMarks(db) == ["user1 f 10", "user1 s 20", "user2 f 10"])
        // thief still holds o3; its transfer reads as from an erased user, in the rows and the events.
        #expect(try ReceiptStore(db).owner(of: "o3") == "thief")
        #expect(try db.scalarInt("SELECT count(*) FROM ownership_transfers WHERE from_app_user_id = '(erased)'") == 1)
        #expect(try EventStore(db).page(for: "thief", limit: 10, before: nil).count == thiefEvents)
        #expect(try mentions(of: "(erased)", in: db).contains { $0.hasPrefix("events.facts_json") })
        #expect(try mentions(of: "(erased)", in: db).contains { $0.hasPrefix("webhook_messages.body") })
        // The purchase is thief's, so it stays; user3 held nothing else.
        #expect(outcome.rows["transactions"] == nil)
    }

    /// The first round of probing found the reverse case named: the erased person held a purchase
    /// taken from another user, whose transfer event (facts and key) and webhook payload kept the id.
    @Test(arguments: await testDialects())
    func aPurchaseTakenFromAnotherGoesAndTheirHistoryOfItKeepsItsShapeUnnamed(_ dialect: Database.Dialect) async throws {
        let db = try await seeded(dialect)
        let outKey = LifecycleEvent.transferKey(originalTransactionID: "o3", at: 99, to: "thief")
        _ = try EventStore(db).replace(
            [
                EventRecord(
                    key: outKey, type: "transfer", at: 99, productID: "monthly", originalTransactionID: "o3", transactionID: nil,
                    factsJSON: #"{"direction":"out","from_app_user_id":"user3","to_app_user_id":"thief"}"#)
            ], for: "user3", originals: [], now: 99)
        try WebhookStore(db).enqueue(
            WebhookMessage(
                id: "evt_3", appUserID: "user3", version: 2, type: "transfer", bundleID: "com.x",
                body: #"{"event":{"facts":{"to_app_user_id":"thief"}}}"#, createdAt: 99),
            to: ["crm"], now: 99)
        #expect(try mentions(of: "thief", in: db).count >= 5)

        let outcome = try erase("thief", at: 500, in: db)
        #expect(try mentions(of: "thief", in: db) == [])
        #expect(outcome.othersChanged == ["user3"] && outcome.rows["transactions"] == 1)
        // user3's event about the move: renamed in its facts and its key, as derivation now names it.
        let events = try EventStore(db).page(for: "user3", limit: 10, before: nil)
        let out = try #require(events.first { $0.type == "transfer" })
        #expect(out.key == LifecycleEvent.transferKey(originalTransactionID: "o3", at: 99, to: Erasure.erasedID))
        #expect(out.factsJSON == #"{"direction":"out","from_app_user_id":"user3","to_app_user_id":"(erased)"}"#)
        // The moves user3 was party to stay, with the product they were of; the purchase is gone.
        let user3 = try #require(try ReceiptStore(db).subscriber("user3"))
        #expect(
            user3.transfers.map { [$0.from ?? "-", $0.to, $0.productID ?? "-"] } == [
                ["-", "user3", "monthly"], ["user3", Erasure.erasedID, "monthly"],
            ])
        #expect(
            try ReceiptStore(db).owner(of: "o3") == nil
                && db.scalarInt("SELECT count(*) FROM transactions WHERE original_transaction_id = 'o3'") == 0)
        #expect(try mentions(of: "(erased)", in: db).contains { $0.hasPrefix("webhook_messages.body") })
    }

    @Test(arguments: await testDialects())
    func anIdNeverStoredErasesNothing(_ dialect: Database.Dialect) async throws {
        let db = try await seeded(dialect)
        let outcome = try erase("nobody", at: 500, in: db)
        #expect(!outcome.found && outcome.total == 0)
    }

    @Test func onSQLiteThePersonsBytesAreGoneFromTheFilesAndTheirWALs() async throws {
        try await withScratchDirectory("receiptd-erasure") { dir in
            let path = dir + "/db.sqlite"
            let rollups = DatabaseQueue.rollupsPath(for: path)
            do {
                let db = try Database(path: path)
                _ = try Migrator(migrations: try Migration.load(from: migrationsDirectory)).migrate(db)
                try RollupStore.attachFile(rollups, to: db)
                let receipts = ReceiptStore(db)
                // Written, rewritten and partly deleted over time, as a live database is, with
                // others' rows around it, before and after.
                for round in 0..<20 {
                    for n in 0..<40 {
                        try db.transaction {
                            _ = try receipts.save(
                                facts(n, padding: (round * 37 + n * 11) % 300), for: "user\(n)", now: Int64(round))
                            try receipts.log(
                                VerificationLogEntry(
                                    appUserID: "user\(n)", environment: .sandbox, appleStatus: 0, outcome: "valid",
                                    attempts: 1, latencyMs: 5), at: Int64(round))
                            _ = try receipts.settle(
                                "user\(n)", hash: "h\(round)", derivedFrom: 1, version: Int64(round), now: Int64(round))
                        }
                    }
                    try db.execute("DELETE FROM verifications WHERE at < \(round - 2)")
                    try db.transaction {
                        // Each holder's rows say every mark they have (so far: a day a round).
                        try RollupStore(db).saveHolderRows(
                            (0..<40).map { n in ("user\(n)", "marks " + (0...round).map { "f \(n + $0)" }.joined(separator: ", "))
                            })
                        try RollupStore(db).addMarks(
                            (0..<40).map { n in
                                ("user\(n)", RollupMark(environment: "sandbox", family: .flow, day: Int64(round + n)))
                            })
                    }
                    if round % 5 == 0 { _ = try db.scalarText("PRAGMA wal_checkpoint(PASSIVE)") }
                }
                // Each settled at last, their document kept in their row (DocumentStore).
                for n in 0..<40 {
                    try db.transaction {
                        let q = try db.prepare("SELECT facts_revision, version FROM subscribers WHERE app_user_id = ?")
                            .bind(["user\(n)"])
                        _ = try q.step()
                        let (revision, version) = (q.int(0), q.int(1))
                        let document = Array(#"{"app_user_id":"kept-document-of-\#(n)","request_date":""}"#.utf8)
                        #expect(
                            try receipts.settle(
                                "user\(n)", hash: "final", derivedFrom: revision, version: version, now: 50,
                                document: DocumentStore.Rendering(version: version + 1, json: document, cut: 54, settings: "s"))
                                == version + 1)
                    }
                }
                let raw = { (file: String) in (try? Data(contentsOf: URL(fileURLWithPath: file))) ?? Data() }
                for file in [path, rollups] {
                    #expect(
                        raw(file).range(of: Data("user17".utf8)) != nil
                            || raw(file + "-wal").range(of: Data("user17".utf8)) != nil)
                }
                #expect(
                    raw(path).range(of: Data("kept-document-of-17".utf8)) != nil
                        || raw(path + "-wal").range(of: Data("kept-document-of-17".utf8)) != nil)
                let outcome = try erase("user17", at: 100, in: db)
                #expect(outcome.rows["rollup_holders"] == 1 && outcome.rows["rollup_marks"] == 20)
                try db.scrubAfterErasure()  // every attached file's WAL too
                for file in [path, path + "-wal", rollups, rollups + "-wal"] {
                    let bytes = raw(file)
                    #expect(bytes.range(of: Data("user17".utf8)) == nil, "\(file)")
                    #expect(bytes.range(of: Data("RECEIPT-OF-17".utf8)) == nil, "\(file)")
                    #expect(bytes.range(of: Data("kept-document-of-17".utf8)) == nil, "\(file)")
                }
                #expect(raw(path).range(of: Data("RECEIPT-OF-16".utf8)) != nil)  // others stay
                #expect(
                    raw(path).range(of: Data("kept-document-of-16".utf8)) != nil
                        || raw(path + "-wal").range(of: Data("kept-document-of-16".utf8)) != nil)
            }
        }
    }
}
