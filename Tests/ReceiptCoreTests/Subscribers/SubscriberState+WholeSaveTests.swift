import DatabaseEngine
import Entitlements
import ReceiptTesting
import Storage
import Testing

@testable import ReceiptCore

/// A save sent whole (``SubscriberState/save(_:for:policy:possession:begun:in:now:log:)`` on
/// PostgreSQL: Migrations/postgresql/0045_whole_saves.sql) against the road that reads, decides
/// and writes (``SubscriberState/store(_:for:policy:possession:begun:in:now:log:)``), which
/// SQLite and every other save take: the same steps on two databases, the same outcome after
/// each and the same rows at the end.
@Suite("A save sent whole")
struct SubscriberStateWholeSaveTests {
    private let state = SubscriberState(
        settings: EntitlementSettings(
            rules: EntitlementRules(["pro": ["monthly"]]), catalog: Catalog(), policy: DerivationPolicy()))

    /// One step: who posts what, when.
    private struct Step {
        var user: String
        var facts: VerifiedFacts
        var at: Int64
    }

    private static func purchase(
        _ transaction: String, of original: String, at: Int64, raw: String = "{}", product: String = "monthly",
        statedAt: Int64? = nil
    ) -> Stated<Purchase> {
        Stated(
            Purchase(
                transactionID: transaction, originalTransactionID: original, productID: product, purchaseDate: at,
                expiresDate: at + 30 * day, environment: .sandbox),
            bundleID: "b", rawJSON: raw)
    }

    private static func renewal(_ original: String, raw: String = "{}", autoRenew: Bool = true) -> Stated<Renewal> {
        Stated(Renewal(originalTransactionID: original, autoRenewStatus: autoRenew, environment: .sandbox), rawJSON: raw)
    }

    /// Every case the server decides: a new subscriber, the same again, a renewal that changed
    /// (undated, dated before and after the snapshot it replaces), a purchase taken from its
    /// holder, two taken from one holder at once, an alias posting, a notification waiting for a
    /// holder, a receipt of more transactions than a statement upserts with one of them twice,
    /// facts stated before the stored ones, and ids whose bytes an array literal must quote.
    private static let steps: [Step] = {
        let odd = #"z"q\ü"#
        let oddOriginal = #"o{5},"x""#
        var many = (0..<20).map { purchase("m\($0)", of: "o4", at: t0 + Int64($0) * day) }
        many.append(purchase("m3", of: "o4", at: t0 + 3 * day, raw: #"{"again":1}"#))
        return [
            Step(
                user: "alice",
                facts: VerifiedFacts(
                    environment: .sandbox, purchases: [purchase("t1", of: "o1", at: t0)], renewals: [renewal("o1")],
                    latestReceipt: "L1"),
                at: t0 + 1_000),
            Step(
                user: "alice",
                facts: VerifiedFacts(
                    environment: .sandbox, purchases: [purchase("t1", of: "o1", at: t0)], renewals: [renewal("o1")],
                    latestReceipt: "L1"),
                at: t0 + 2_000),
            Step(
                user: "alice",
                facts: VerifiedFacts(
                    environment: .sandbox, purchases: [purchase("t1", of: "o1", at: t0)],
                    renewals: [renewal("o1", raw: #"{"r":2}"#, autoRenew: false)], renewalChangedAt: t0 + 500),
                at: t0 + 3_000),
            Step(
                user: "alice",
                facts: VerifiedFacts(
                    environment: .sandbox, purchases: [purchase("t1", of: "o1", at: t0)],
                    renewals: [renewal("o1", raw: #"{"r":3}"#)], renewalChangedAt: t0 + 3_500),
                at: t0 + 4_000),
            Step(
                user: "alice",
                facts: VerifiedFacts(
                    environment: .sandbox, purchases: [purchase("t9", of: "o9", at: t0)], renewals: [renewal("o9")]),
                at: t0 + 4_500),
            Step(
                user: "bob",
                facts: VerifiedFacts(
                    environment: .sandbox,
                    purchases: [purchase("t1", of: "o1", at: t0), purchase("t2", of: "o1", at: t0 + 30 * day)],
                    renewals: [renewal("o1", raw: #"{"r":4}"#)], latestReceipt: "L2"),
                at: t0 + 5_000),
            Step(
                user: "bob-old",
                facts: VerifiedFacts(environment: .sandbox, purchases: [purchase("t3", of: "o2", at: t0 + day)]),
                at: t0 + 6_000),
            Step(
                user: "carol",
                facts: VerifiedFacts(environment: .sandbox, purchases: [purchase("t5", of: "o3", at: t0)]),
                at: t0 + 7_000),
            Step(
                user: "dave", facts: VerifiedFacts(environment: .sandbox, purchases: many, renewals: [renewal("o4")]),
                at: t0 + 8_000),
            Step(
                user: "erin",
                facts: VerifiedFacts(
                    environment: .sandbox,
                    purchases: [purchase("t2", of: "o1", at: t0 + 30 * day), purchase("t3", of: "o2", at: t0 + day)]),
                at: t0 + 9_000),
            Step(
                user: "erin",
                facts: VerifiedFacts(
                    environment: .sandbox, purchases: [purchase("t2", of: "o1", at: t0 + 30 * day, raw: #"{"old":1}"#)],
                    statedAt: t0),
                at: t0 + 10_000),
            Step(
                user: odd,
                facts: VerifiedFacts(
                    environment: .sandbox, purchases: [purchase(#"t"6\"#, of: oddOriginal, at: t0)],
                    renewals: [renewal(oddOriginal)]),
                at: t0 + 11_000),
            Step(
                user: "frank",
                facts: VerifiedFacts(environment: .sandbox, purchases: [purchase(#"t"6\"#, of: oddOriginal, at: t0)]),
                at: t0 + 12_000),
        ]
    }()

    @Test(arguments: await testDialects().filter { $0 == .postgresql })
    func aWholeSaveWritesWhatTheReadingSaveWrites(_ dialect: Database.Dialect) async throws {
        let reading = try await migratedDatabase(dialect)
        let whole = try await migratedDatabase(dialect)
        for db in [reading, whole] {
            // bob-old names bob; a notification waits for o3's holder.
            try db.execute(
                """
                INSERT INTO subscribers (app_user_id, created_at, updated_at, first_seen_at) VALUES ('bob', 1, 1, 1);
                INSERT INTO aliases (alias, app_user_id, at) VALUES ('bob-old', 'bob', 1)
                """)
            _ = try NotificationStore(db).insert(
                NotificationRecord(
                    dedupeKey: "early", version: 2, type: "DID_RENEW", originalTransactionID: "o3", outcome: "pending_owner",
                    receivedAt: t0, body: "{}"))
        }
        for (i, step) in Self.steps.enumerated() {
            let stored = try state.store(step.facts, for: step.user, policy: .transfer, in: reading, now: step.at)
            let saving = try state.save(step.facts, for: step.user, policy: .transfer, in: whole, now: step.at)
            guard case .sent = saving else {
                Issue.record("step \(i) was not sent whole")
                return
            }
            #expect(try saving.stored() == stored, "step \(i): \(step.user)")
        }
        for table in Self.tables {
            #expect(try Self.rows(table, in: whole) == Self.rows(table, in: reading), "\(table)")
        }
        // What the steps should have done, beyond agreeing.
        var holders: [String: String] = [:]
        for row in try Self.rows("SELECT original_transaction_id, app_user_id FROM ownership", in: whole) {
            holders[row[0]!] = row[1]!
        }
        #expect(
            holders == [
                "o1": "erin", "o2": "erin", "o3": "carol", "o4": "dave", "o9": "alice", #"o{5},"x""#: "frank",
            ])
        #expect(try Self.rows("SELECT app_user_id, outcome FROM notifications", in: whole) == [["carol", "attached"]])
    }

    /// Twelve people posting the same purchase at once, each with a renewal of their own, each
    /// answered (``SubscriberState/answer(for:database:now:_:)``): their saves queue behind the
    /// purchase's lock, so every change of holder names the one before it, the last holds it,
    /// and everyone ends settled on their facts. On PostgreSQL the saves go whole.
    @Test(arguments: await testDialects())
    func concurrentWholeSavesOfOnePurchaseHandItOnInTurn(_ dialect: Database.Dialect) async throws {
        try await withScratchDirectory("receiptd-whole") { dir in
            let queue = try await migratedQueue(dialect, in: dir)
            let state = state
            let users = (1...12).map { "p\($0)" }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for (n, user) in users.enumerated() {
                    group.addTask {
                        let facts = VerifiedFacts(
                            environment: .sandbox,
                            purchases: [
                                Self.purchase("t1", of: "o1", at: t0),
                                Self.purchase("r\(n)", of: "o1", at: t0 + Int64(n + 1) * day),
                            ],
                            renewals: [Self.renewal("o1", raw: #"{"n":\#(n)}"#)])
                        let answered = try await state.answer(for: user, database: queue, now: t0 + 20 * day) { db in
                            try state.save(facts, for: user, policy: .transfer, in: db, now: t0 + 20 * day)
                        }
                        #expect(answered.document.appUserID == user)
                    }
                }
                try await group.waitForAll()
            }
            try await queue.read { db in
                let transfers = try Self.rows(
                    "SELECT from_app_user_id, to_app_user_id FROM ownership_transfers ORDER BY id", in: db)
                #expect(transfers.count == users.count)
                #expect(transfers.first?[0] == nil)
                for (before, after) in zip(transfers, transfers.dropFirst()) { #expect(after[0] == before[1]) }
                #expect(Set(transfers.map { $0[1]! }) == Set(users))
                #expect(try ReceiptStore(db).owner(of: "o1") == transfers.last?[1])
                for user in users {
                    let stored = try #require(try ReceiptStore(db).subscriber(user))
                    #expect(stored.derivedRevision == stored.factsRevision, "\(user)")
                }
            }
        }
    }

    /// The tables a save writes, each read whole in a fixed order (row ids and sequences left
    /// out: the two databases number alike, but nothing should depend on it).
    private static let tables = [
        "SELECT app_user_id, created_at, updated_at, first_seen_at, facts_revision, summary_until FROM subscribers ORDER BY 1",
        "SELECT * FROM ownership ORDER BY original_transaction_id",
        "SELECT original_transaction_id, from_app_user_id, to_app_user_id, at FROM ownership_transfers ORDER BY id",
        "SELECT * FROM transactions ORDER BY transaction_id",
        "SELECT * FROM pending_renewal_info ORDER BY original_transaction_id",
        "SELECT * FROM renewal_history ORDER BY id",
        "SELECT * FROM latest_receipts ORDER BY original_transaction_id",
        "SELECT app_user_id, at FROM changes ORDER BY sequence",
        "SELECT dedupe_key, app_user_id, outcome FROM notifications ORDER BY id",
    ]

    /// Every row `sql` reads, each column as text but a row id's.
    private static func rows(_ sql: String, in db: Database) throws -> [[String?]] {
        let q = try db.prepare(sql)
        var rows: [[String?]] = []
        while try q.step() {
            rows.append((0..<q.columnCount).filter { q.columnName($0) != "id" }.map { q.text($0) })
        }
        return rows
    }
}
