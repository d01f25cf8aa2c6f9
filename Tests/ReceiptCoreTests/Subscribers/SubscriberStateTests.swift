import DatabaseEngine
import Entitlements
import Foundation
import Identifiers
import JSON
import Logging
import ReceiptTesting
import Storage
import Testing

@testable import ReceiptCore

let day: Int64 = 86_400_000
let t0: Int64 = 1_700_000_000_000

/// One monthly subscription, `o1`, bought at `t0`; `cancelled` refunds it.
func monthly(cancelled: Int64? = nil, autoRenew: Bool = false) -> VerifiedFacts {
    VerifiedFacts(
        environment: .sandbox,
        purchases: [
            Stated(
                Purchase(
                    transactionID: "t1", originalTransactionID: "o1", productID: "monthly", purchaseDate: t0,
                    expiresDate: t0 + 30 * day, cancellationDate: cancelled, environment: .sandbox),
                bundleID: "b", rawJSON: cancelled == nil ? "{}" : #"{"c":1}"#)
        ],
        renewals: [
            Stated(Renewal(originalTransactionID: "o1", autoRenewStatus: autoRenew, environment: .sandbox), rawJSON: "{}")
        ])
}

private let state = SubscriberState(
    settings: EntitlementSettings(rules: EntitlementRules(["pro": ["monthly"]]), catalog: Catalog(), policy: DerivationPolicy()))

private let logEntry = VerificationLogEntry(
    appUserID: "bob", environment: .sandbox, appleStatus: 0, outcome: "valid", attempts: 1, latencyMs: 3)

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

    /// Two spellings of an id are two subscribers (Docs/api.md "Identifiers"): a save that changed
    /// both settles both, each deriving and recording its own events.
    @Test func aSaveThatChangedTwoSpellingsOfAnIdSettlesBoth() async throws {
        let (nfc, nfd) = ("Zo\u{00EB}", "Zoe\u{0308}")
        try await withScratchDirectory("receiptd-state") { dir in
            let queue = try DatabaseQueue(path: dir + "/db.sqlite")
            try queue.runBlocking { db in
                _ = try Migrator(migrations: try Migration.load(from: migrationsDirectory)).migrate(db)
                var other = monthly()
                other.purchases[0].fact.transactionID = "t2"
                other.purchases[0].fact.originalTransactionID = "o2"
                other.renewals[0].fact.originalTransactionID = "o2"
                _ = try ReceiptStore(db).save(monthly(), for: nfc, now: t0 + day)
                _ = try ReceiptStore(db).save(other, for: nfd, now: t0 + day)
            }
            await state.settleStored(
                [nfc, nfd], database: queue, now: t0 + 2 * day, logger: Logger(label: "test"), after: "a test")
            for user in [nfc, nfd] {
                let types = try await queue.run { db in try EventStore(db).page(for: user, limit: 10, before: nil).map(\.type) }
                #expect(types == ["cancellation", "initial_purchase"], "\(Array(user.utf8))")
            }
        }
    }
}

/// The `n`th monthly renewal of `o1` (the first is `t1`, bought at `t0`).
private func renewal(_ n: Int64) -> VerifiedFacts {
    let bought = t0 + (n - 1) * 30 * day
    return VerifiedFacts(
        environment: .sandbox,
        purchases: [
            Stated(
                Purchase(
                    transactionID: "t\(n)", originalTransactionID: "o1", productID: "monthly", purchaseDate: bought,
                    originalPurchaseDate: t0, expiresDate: bought + 30 * day, environment: .sandbox),
                bundleID: "b", rawJSON: #"{"n":\#(n)}"#)
        ])
}

@Suite("Deriving off the writer")
struct DerivationOffTheWriterTests {
    @Test func aDerivationFromASnapshotAWriteOvertookRecordsNothing() throws {
        let db = try migratedDatabase()
        _ = try state.store(monthly(), for: "u", policy: .keep, in: db, now: t0)
        let snapshot = try #require(try ReceiptStore(db).subscriber("u"))
        // A refund is stored between the snapshot and the record of what was derived from it.
        _ = try state.store(monthly(cancelled: t0 + day), for: "u", policy: .keep, in: db, now: t0 + day)
        let facts = snapshot.pinnedFacts
        let document = state.document(snapshot, facts: facts, now: t0 + day)
        let stale = try state.record(
            snapshot, document: document, events: state.events(snapshot, facts: facts, now: t0 + day), in: db, now: t0 + day)
        #expect(stale == nil)
        #expect(try db.scalarInt("SELECT count(*) FROM events") == 0)
        #expect(try db.scalarInt("SELECT version FROM subscribers") == 0)
    }

    /// Twelve saves of one user at once, each then reading them: every settle that lost (on
    /// PostgreSQL an unanswered one fails its transaction: ``SubscriberState/current(_:database:now:behind:)``)
    /// reads again, and the user ends settled on the newest facts, each event stored once.
    @Test(arguments: await testDialects())
    func concurrentSavesOfOneUserEndSettledOnTheirNewestFacts(_ dialect: Database.Dialect) async throws {
        try await withScratchDirectory("receiptd-settle") { dir in
            let queue = try await migratedQueue(dialect, in: dir)
            let now = t0 + 400 * day
            let answers = try await withThrowingTaskGroup(of: Int64.self) { group in
                for n in Int64(1)...12 {
                    group.addTask {
                        let stored = try await queue.write { db in
                            try state.store(renewal(n), for: "u", policy: .keep, in: db, now: now)
                        }
                        guard case .stored = stored else { throw CancellationError() }
                        return try #require(try await state.current("u", database: queue, now: now)).version
                    }
                }
                return try await group.reduce(into: [Int64]()) { $0.append($1) }
            }
            let stored = try #require(try await queue.read { db in try ReceiptStore(db).subscriber("u") })
            #expect(stored.purchases.count == 12)
            #expect(stored.derivedRevision == stored.factsRevision)
            let facts = stored.pinnedFacts
            #expect(stored.stateHash == state.document(stored, facts: facts, now: now).fingerprint)
            let events = try await queue.read { db in try EventStore(db).page(for: "u", limit: 100, before: nil) }
            #expect(Set(events.map(\.key)) == Set(state.events(stored, facts: facts, now: now).map(\.key)))
            #expect(answers.allSatisfy { $0 >= 1 && $0 <= stored.version })
            #expect(events.count == Set(events.map(\.key)).count)
        }
    }

    /// A settle sent unanswered from a snapshot another write overtook fails its transaction, as
    /// does one whose read of the stored events another settle overtook (an event stored twice):
    /// nothing of either stays, and the user is settled by the next read.
    @Test(arguments: await testDialects())
    func anUnansweredSettleThatLostLeavesNothing(_ dialect: Database.Dialect) async throws {
        try await withScratchDirectory("receiptd-unanswered") { dir in
            let queue = try await migratedQueue(dialect, in: dir)
            let snapshot = try await queue.write { db in
                _ = try state.store(monthly(), for: "u", policy: .keep, in: db, now: t0)
                return try #require(try ReceiptStore(db).subscriber("u"))
            }
            let facts = snapshot.pinnedFacts
            let document = state.document(snapshot, facts: facts, now: t0)
            let events = state.events(snapshot, facts: facts, now: t0)
            let record = { @Sendable (subscriber: SubscriberRecord, stored: [EventRecord]) async throws in
                try await queue.write { db in
                    _ = try state.record(subscriber, document: document, events: events, in: db, now: t0, storedEvents: stored)
                }
            }
            try await record(snapshot, [])  // version 1, its events stored
            let row = { try await queue.read { db in try db.scalarText("SELECT version || ' ' || state_hash FROM subscribers") } }
            let settled = try await row()
            let count = { try await queue.read { db in try db.scalarInt("SELECT count(*) FROM events") } }
            let stored = try await count()
            #expect(settled == "1 \(document.fingerprint)" && stored == Int64(events.count) && !events.isEmpty)
            // The same snapshot again: its version moved on.
            let overtaken = await #expect(throws: StorageError.self) { try await record(snapshot, []) }
            #expect(overtaken?.lostToAnotherSettle == true)
            // Read after that settle but with the events read before it: the events again.
            let current = try #require(try await queue.read { db in try ReceiptStore(db).subscriber("u") })
            let twice = await #expect(throws: StorageError.self) { try await record(current, []) }
            #expect(twice?.lostToAnotherSettle == true)
            #expect(try await row() == settled)
            #expect(try await count() == stored)
            #expect(try await state.current("u", database: queue, now: t0)?.version == 1)
        }
    }
}

@Suite("Ownership policy on save")
struct OwnershipPolicyTests {
    @Test func keepRefusesASecondUserAndWritesNothingButTheLog() throws {
        let db = try migratedDatabase()
        _ = try state.store(monthly(), for: "alice", policy: .keep, in: db, now: t0, log: logEntry)
        let before = try tableSnapshot(db)
        guard
            case .inUse(let holder) = try state.store(
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
            case .stored(let changes, let changed) = try state.store(
                monthly(), for: "ann", policy: .transfer, in: db, now: t0)
        else {
            Issue.record("transfer refused a purchase nobody held")
            return
        }
        #expect(changes == 1 && changed == ["ann"])  // only the change of holder: the facts were there
        let attached = try #require(try notifications.find(dedupeKey: "early"))
        #expect(attached.id == waiting && attached.outcome == "attached" && attached.appUserID == "ann")
        // Under `transfer` a second user takes it; the first keeps the history of having held it.
        guard case .stored = try state.store(monthly(), for: "bob", policy: .transfer, in: db, now: t0 + 1) else {
            Issue.record("transfer refused")
            return
        }
        #expect(try ReceiptStore(db).owner(of: "o1") == "bob")
        #expect(try ReceiptStore(db).subscriber("ann")?.purchases.isEmpty == true)
    }

    @Test func transferIfInactiveRefusesWhileThePurchaseEntitlesItsHolderAndMovesItOnceRefunded() throws {
        let db = try migratedDatabase()
        _ = try state.store(monthly(), for: "alice", policy: .transferIfInactive, in: db, now: t0 + day)
        guard case .inUse(let holder) = try state.store(monthly(), for: "bob", policy: .transferIfInactive, in: db, now: t0 + day)
        else {
            Issue.record("an active purchase moved")
            return
        }
        #expect(holder == "alice")
        #expect(try ReceiptStore(db).owner(of: "o1") == "alice")
        // Apple's newest word is a refund: it entitles nobody, so it may move, and the refund is stored.
        guard
            case .stored = try state.store(
                monthly(cancelled: t0 + 2 * day), for: "bob", policy: .transferIfInactive, in: db, now: t0 + 3 * day)
        else {
            Issue.record("a refunded purchase did not move")
            return
        }
        #expect(try ReceiptStore(db).owner(of: "o1") == "bob")
    }
}

/// When Apple is told a person's token for a purchase they hold (`appStore.setAppAccountTokens`).
extension SubscriberStateTests {
    @Test func aPurchaseGetsThePersonsTokenUnlessItAlreadyNamesThem() {
        let mine = "a0a0a0a0-0000-4000-8000-000000000001"
        // No token (bought outside the app, posted without one): told.
        #expect(SubscriberState.needsToken(current: nil, personToken: mine, names: nil, transferred: false))
        // Theirs already, in any case; or a token naming them (their id, an alias): not told.
        #expect(!SubscriberState.needsToken(current: mine.uppercased(), personToken: mine, names: true, transferred: true))
        #expect(!SubscriberState.needsToken(current: "their-id", personToken: mine, names: true, transferred: false))
        // Someone else's (a transfer, an old owner): told.
        #expect(SubscriberState.needsToken(current: "b0b0", personToken: mine, names: false, transferred: false))
        // The app's own token, naming nobody receiptd knows: left alone, unless the purchase just changed hands.
        #expect(!SubscriberState.needsToken(current: "c0c0", personToken: mine, names: nil, transferred: false))
        #expect(SubscriberState.needsToken(current: "c0c0", personToken: mine, names: nil, transferred: true))
    }
}

/// Issue 57: a write that began before its person was erased (Apple or Google being asked
/// meanwhile) writes nothing of theirs back; one that began after is a new start.
@Suite("Erased while in flight")
struct ErasedWhileInFlightTests {
    /// A save by an alias checks the subscriber it names too: the alias itself was not erased,
    /// the id it names was (recorded while the alias still stood); and the id as given, when it
    /// names nobody else.
    @Test(arguments: await testDialects())
    func aSaveByAnAliasOfSomeoneErasedMeanwhileWritesNothing(dialect: Database.Dialect) async throws {
        let db = try await migratedDatabase(dialect)
        _ = try state.store(monthly(), for: "ann", policy: .transfer, in: db, now: t0)
        try db.execute("INSERT INTO aliases (alias, app_user_id, at) VALUES ('ann-phone', 'ann', \(t0))")
        try ErasedIDs(db).record(["ann"], at: t0 + 2)
        #expect(throws: ErasedIDs.ErasedMeanwhile()) {
            _ = try state.store(monthly(), for: "ann-phone", policy: .transfer, begun: t0 + 1, in: db, now: t0 + 3)
        }
        #expect(throws: ErasedIDs.ErasedMeanwhile()) {
            _ = try state.store(monthly(), for: "ann", policy: .transfer, begun: t0 + 1, in: db, now: t0 + 3)
        }
        // Begun after it: stored, for ann.
        guard case .stored = try state.store(monthly(), for: "ann-phone", policy: .transfer, begun: t0 + 3, in: db, now: t0 + 4)
        else {
            Issue.record("a save begun after the erasure was refused")
            return
        }
    }

    @Test(arguments: await testDialects())
    func aSaveBegunBeforeTheErasureWritesNothingBack(dialect: Database.Dialect) async throws {
        let db = try await migratedDatabase(dialect)
        _ = try state.store(monthly(), for: "eve", policy: .transfer, in: db, now: t0, log: logEntry)
        // A refresh of eve begins at t0 + 1; eve is erased at t0 + 2; the refresh's answer arrives.
        _ = try db.transaction { try Erasure(db).erase("eve", by: "test", at: t0 + 2) }
        #expect(try ReceiptStore(db).subscriber("eve") == nil)
        let before = try rowsMentioning("eve", in: db)
        #expect(throws: ErasedIDs.ErasedMeanwhile()) {
            _ = try state.store(monthly(), for: "eve", policy: .transfer, begun: t0 + 1, in: db, now: t0 + 3, log: logEntry)
        }
        #expect(try rowsMentioning("eve", in: db) == before)
        #expect(try ReceiptStore(db).owner(of: "o1") == nil && ReceiptStore(db).subscriber("eve") == nil)
        // The log of a refusal that began before it is not written either.
        try ReceiptStore(db).log(
            VerificationLogEntry(
                appUserID: "eve", environment: nil, appleStatus: 21002, outcome: "invalid_receipt", attempts: 1, latencyMs: 1),
            at: t0 + 3, unlessErasedSince: t0 + 1)
        #expect(try db.scalarInt("SELECT count(*) FROM verifications WHERE app_user_id = 'eve'") == 0)
        // Work begun after the erasure is the person coming back: stored.
        guard case .stored = try state.store(monthly(), for: "eve", policy: .transfer, begun: t0 + 4, in: db, now: t0 + 5)
        else {
            Issue.record("a save begun after the erasure was refused")
            return
        }
        #expect(try ReceiptStore(db).owner(of: "o1") == "eve")
        // The digests are kept a day, and only digests: the id itself is in no row of theirs.
        #expect(try db.scalarInt("SELECT count(*) FROM erased_ids") == 1)
        #expect(try db.scalarText("SELECT digest FROM erased_ids") == ErasedIDs.digest("eve"))
        _ = try db.transaction { try Erasure(db).erase("eve", by: "test", at: t0 + 2 + ErasedIDs.window + 10) }
        #expect(try db.scalarInt("SELECT count(*) FROM erased_ids WHERE erased_at < \(t0 + 10)") == 0)
    }
}

/// Issue 62: PostgreSQL no longer checks `ownership`'s and `events`' foreign keys
/// (Migrations/postgresql/0042): receiptd's own writes must keep what they kept.
@Suite("Rows of people without foreign keys")
struct RowsOfPeopleTests {
    /// Saves, transfers, derivations, merges and erasures of a few people over a few purchases,
    /// in a seeded order; after each, every held purchase and every event names a subscriber.
    @Test(arguments: await testDialects())
    func everyHeldPurchaseAndEventNamesASubscriber(_ dialect: Database.Dialect) async throws {
        try await withScratchDirectory("receiptd-integrity") { dir in
            let queue = try await migratedQueue(dialect, in: dir)
            let users = ["a", "b", "c", "Zo\u{00EB}", "Zoe\u{0308}"]
            var seed: UInt64 = 62
            func next(_ n: Int) -> Int {
                seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                return Int(seed >> 33) % n
            }
            var done = (saved: 0, merged: 0, erased: 0)
            for step in 0..<150 {
                let (now, user) = (t0 + Int64(step) * 60_000, users[next(users.count)])
                switch next(10) {
                case 0..<7:
                    var facts = monthly(cancelled: next(5) == 0 ? t0 + day : nil)
                    let original = "o\(next(4))"
                    facts.purchases[0].fact.originalTransactionID = original
                    facts.purchases[0].fact.transactionID = "t-\(original)-\(next(3))"
                    facts.renewals[0].fact.originalTransactionID = original
                    let stored = try await queue.write { [facts] db in
                        try state.store(facts, for: user, policy: .transfer, in: db, now: now)
                    }
                    if case .stored(_, let changed) = stored {
                        done.saved += 1
                        for id in changed { _ = try await state.current(id, database: queue, now: now) }
                    }
                case 7..<9:
                    let other = users[next(users.count)]
                    guard !other.isExactly(user) else { continue }
                    // As the API merges: refused when the ids are already one, or one is another's alias.
                    let clock = TestClock(now)
                    let addAlias = AddAlias(context: .testing(queue, clock: clock.wall, state: state))
                    if (try? await addAlias(user, alias: other))?.merged == true { done.merged += 1 }
                default:
                    _ = try await queue.write { db in try Erasure(db).erase(user, by: "test", at: now) }
                    done.erased += 1
                }
                let orphans = try await queue.read { db in
                    try (
                        db.scalarInt(
                            "SELECT count(*) FROM ownership o WHERE NOT EXISTS (SELECT 1 FROM subscribers s WHERE s.app_user_id = o.app_user_id)"
                        ),
                        db.scalarInt(
                            "SELECT count(*) FROM events e WHERE NOT EXISTS (SELECT 1 FROM subscribers s WHERE s.app_user_id = e.app_user_id)"
                        )
                    )
                }
                #expect(orphans.0 == 0 && orphans.1 == 0, "step \(step)")
            }
            // The workload did what it says: purchases held, events derived, merges and erasures.
            let (held, events) = try await queue.read { db in
                (try db.scalarInt("SELECT count(*) FROM ownership"), try db.scalarInt("SELECT count(*) FROM events"))
            }
            #expect(done.saved > 50 && done.merged > 10 && done.erased > 5 && held ?? 0 > 0 && events ?? 0 > 0)
        }
    }
}
