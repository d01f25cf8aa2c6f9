import Entitlements
import Foundation
import ReceiptTesting
import Storage
import Testing

@testable import ReceiptCore

private let day: Int64 = 86_400_000
private let t0: Int64 = 1_700_000_000_000

/// One monthly subscription, `o1`, bought at `t0`; `cancelled` refunds it.
private func monthly(cancelled: Int64? = nil, autoRenew: Bool = false) -> VerifiedFacts {
    VerifiedFacts(
        environment: "sandbox",
        purchases: [
            Stated(
                Purchase(
                    transactionID: "t1", originalTransactionID: "o1", productID: "monthly", purchaseDate: t0,
                    expiresDate: t0 + 30 * day, cancellationDate: cancelled, environment: "sandbox"),
                bundleID: "b", rawJSON: cancelled == nil ? "{}" : #"{"c":1}"#)
        ],
        renewals: [
            Stated(Renewal(originalTransactionID: "o1", autoRenewStatus: autoRenew, environment: "sandbox"), rawJSON: "{}")
        ])
}

private let state = SubscriberState(
    settings: EntitlementSettings(rules: EntitlementRules(["pro": ["monthly"]]), catalog: Catalog(), policy: DerivationPolicy()))

private let logEntry = VerificationLogEntry(
    appUserID: "bob", environment: "sandbox", appleStatus: 0, outcome: "valid", attempts: 1, latencyMs: 3)

@Suite("Subscriber state over time")
struct SubscriberStateTests {
    @Test func anExpiryNobodyPostedBumpsTheVersionAndRecordsTheExpirationOnTheNextRead() async throws {
        try await withScratchDirectory("receiptd-state") { dir in
            let queue = try DatabaseQueue(path: dir + "/db.sqlite")
            try queue.runBlocking { db in
                _ = try Migrator(migrations: try Migration.load(from: migrationsDirectory)).migrate(db)
                _ = try ReceiptStore(db).save(monthly(), for: "u", now: t0 + day)
            }
            let during = try #require(try await state.current("u", database: queue, now: t0 + 2 * day))
            #expect(during.version == 1)
            #expect(try await state.current("u", database: queue, now: t0 + 3 * day)?.version == 1)  // nothing changed
            let after = try #require(try await state.current("u", database: queue, now: t0 + 31 * day))
            #expect(after.version == 2)
            #expect((after.document.content["entitlements"]?["pro"]?["active"]) == .bool(false))
            let types = try await queue.run { db in try EventStore(db).page(for: "u", limit: 10, before: nil).map(\.type) }
            #expect(types == ["expiration", "cancellation", "initial_purchase"])
            #expect(try await state.current("nobody", database: queue, now: t0) == nil)
        }
    }
}

@Suite("Ownership policy on save")
struct OwnershipPolicyTests {
    @Test func keepRefusesASecondUserAndWritesNothingButTheLog() throws {
        let db = try migratedDatabase()
        _ = try state.save(monthly(), for: "alice", policy: .keep, in: db, now: t0, log: logEntry)
        let before = try tableSnapshot(db)
        guard
            case .inUse(let holder) = try state.save(
                monthly(cancelled: t0 + 1), for: "bob", policy: .keep, in: db, now: t0 + 1, log: logEntry)
        else {
            Issue.record("keep let a second user take the purchase")
            return
        }
        #expect(holder == "alice")
        #expect(try tableSnapshot(db) == before)
        #expect(try db.scalarInt("SELECT count(*) FROM verifications") == 2)
        #expect(try ReceiptStore(db).subscriber("bob") == nil)
    }

    @Test func transferMovesThePurchaseAndAttachesDeliveriesThatWaitedForAHolder() throws {
        let db = try migratedDatabase()
        let notifications = NotificationStore(db)
        let waiting = try #require(
            try notifications.insert(
                NotificationRecord(
                    dedupeKey: "early", version: 2, type: "DID_RENEW", originalTransactionID: "o1", outcome: "pending_owner",
                    receivedAt: t0, body: "{}")))
        _ = try ReceiptStore(db).saveUnowned(monthly(), now: t0)
        guard
            case .document(_, let version, let changes) = try state.save(
                monthly(), for: "ann", policy: .transfer, in: db, now: t0)
        else {
            Issue.record("transfer refused a purchase nobody held")
            return
        }
        #expect(version == 1 && changes == 1)  // only the change of holder: the facts were there
        let attached = try #require(try notifications.find(dedupeKey: "early"))
        #expect(attached.id == waiting && attached.outcome == "attached" && attached.appUserID == "ann")
        // Under `transfer` a second user takes it; the first keeps the history of having held it.
        guard case .document = try state.save(monthly(), for: "bob", policy: .transfer, in: db, now: t0 + 1) else {
            Issue.record("transfer refused")
            return
        }
        #expect(try ReceiptStore(db).owner(of: "o1") == "bob")
        #expect(try ReceiptStore(db).subscriber("ann")?.purchases.isEmpty == true)
    }

    @Test func transferIfInactiveRefusesWhileThePurchaseEntitlesItsHolderAndMovesItOnceRefunded() throws {
        let db = try migratedDatabase()
        _ = try state.save(monthly(), for: "alice", policy: .transferIfInactive, in: db, now: t0 + day)
        guard case .inUse(let holder) = try state.save(monthly(), for: "bob", policy: .transferIfInactive, in: db, now: t0 + day)
        else {
            Issue.record("an active purchase moved")
            return
        }
        #expect(holder == "alice")
        #expect(try ReceiptStore(db).owner(of: "o1") == "alice")
        // Apple's newest word is a refund: it entitles nobody, so it may move, and the refund is stored.
        guard
            case .document = try state.save(
                monthly(cancelled: t0 + 2 * day), for: "bob", policy: .transferIfInactive, in: db, now: t0 + 3 * day)
        else {
            Issue.record("a refunded purchase did not move")
            return
        }
        #expect(try ReceiptStore(db).owner(of: "o1") == "bob")
    }
}
