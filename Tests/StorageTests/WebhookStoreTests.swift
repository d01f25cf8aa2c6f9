import DatabaseEngine
import Foundation
import ReceiptTesting
import Testing

@testable import Storage

@Suite("Webhook store")
struct WebhookStoreTests {
    private func message(_ n: Int, user: String, version: Int64, at: Int64 = 0) -> WebhookMessage {
        WebhookMessage(
            id: "evt_\(user)_\(n)", appUserID: user, version: version, type: n % 2 == 0 ? "renewal" : "refund",
            bundleID: "com.example.app", body: #"{"n":\#(n)}"#, createdAt: at)
    }

    private let delivered = WebhookAttemptOutcome(next: .delivered, httpStatus: 204, error: nil)

    @Test(arguments: await testDialects())
    func oneSubscribersDeliveriesGoOneAtATimeInOrderOthersInParallel(dialect: Database.Dialect) async throws {
        let db = try await migratedDatabase(dialect)
        let store = WebhookStore(db)
        for (n, user) in [(1, "a"), (2, "a"), (3, "b"), (4, "a")] {
            #expect(try store.enqueue(message(n, user: user, version: Int64(n)), to: ["crm", "billing"], now: 10) == 2)
        }
        // Only each queue's head is due: a's first and b's, per endpoint.
        let first = try store.claim(endpoint: "crm", limit: 10, token: "p1", now: 10, leaseUntil: 100)
        #expect(first.map(\.messageID) == ["evt_a_1", "evt_b_3"])
        #expect(first.allSatisfy { $0.attempt == 1 && $0.firstAttemptAt == 10 })
        // Claimed: nobody else takes them while the lease holds.
        #expect(try store.claim(endpoint: "crm", limit: 10, token: "p2", now: 50, leaseUntil: 150).isEmpty)
        #expect(try store.finish(first[0], token: "p1", outcome: delivered, now: 20))
        // a's next falls due; b's queue is empty behind its head.
        let second = try store.claim(endpoint: "crm", limit: 10, token: "p1", now: 20, leaseUntil: 120)
        #expect(second.map(\.messageID) == ["evt_a_2"])
        // The other endpoint's queues are their own.
        #expect(
            try store.claim(endpoint: "billing", limit: 1, token: "p1", now: 20, leaseUntil: 120).map(\.messageID) == ["evt_a_1"])
    }

    @Test(arguments: await testDialects())
    func aRetryKeepsTheQueueWaitingAndFailingForGoodLetsItGoOn(dialect: Database.Dialect) async throws {
        let db = try await migratedDatabase(dialect)
        let store = WebhookStore(db)
        for n in 1...2 { try store.enqueue(message(n, user: "a", version: Int64(n)), to: ["crm"], now: 0) }
        let claim = try store.claim(endpoint: "crm", limit: 5, token: "p", now: 0, leaseUntil: 60)[0]
        let retry = WebhookAttemptOutcome(next: .retry(at: 30), httpStatus: 500, error: "HTTP 500")
        #expect(try store.finish(claim, token: "p", outcome: retry, now: 1))
        #expect(try store.claim(endpoint: "crm", limit: 5, token: "p", now: 29, leaseUntil: 90).isEmpty)
        let again = try store.claim(endpoint: "crm", limit: 5, token: "p", now: 30, leaseUntil: 90)
        #expect(again.map(\.messageID) == ["evt_a_1"] && again[0].attempt == 2 && again[0].firstAttemptAt == 0)
        #expect(try store.finish(again[0], token: "p", outcome: .init(next: .failed, httpStatus: nil, error: "timeout"), now: 31))
        #expect(try store.claim(endpoint: "crm", limit: 5, token: "p", now: 31, leaseUntil: 90).map(\.messageID) == ["evt_a_2"])
        let failed = try store.deliveries(status: .failed, endpoint: nil, appUserID: nil, limit: 10)
        #expect(failed.count == 1 && failed[0].attempts == 2 && failed[0].lastError == "timeout" && failed[0].finishedAt == 31)
    }

    @Test(arguments: await testDialects())
    func anExpiredLeaseIsClaimedAgainAndTheOldHolderCannotFinish(dialect: Database.Dialect) async throws {
        let db = try await migratedDatabase(dialect)
        let store = WebhookStore(db)
        try store.enqueue(message(1, user: "a", version: 1), to: ["crm"], now: 0)
        let old = try store.claim(endpoint: "crm", limit: 1, token: "dead", now: 0, leaseUntil: 60)[0]
        let taken = try store.claim(endpoint: "crm", limit: 1, token: "alive", now: 60, leaseUntil: 120)
        #expect(taken.map(\.deliveryID) == [old.deliveryID] && taken[0].attempt == 2)
        #expect(try !store.finish(old, token: "dead", outcome: delivered, now: 61))
        #expect(try store.finish(taken[0], token: "alive", outcome: delivered, now: 62))
    }

    @Test(arguments: await testDialects())
    func requeueAndReplay(dialect: Database.Dialect) async throws {
        let db = try await migratedDatabase(dialect)
        let store = WebhookStore(db)
        for n in 1...3 {
            try store.enqueue(message(n, user: "a", version: Int64(n), at: Int64(n) * 100), to: ["crm"], now: Int64(n) * 100)
        }
        var claim = try store.claim(endpoint: "crm", limit: 1, token: "p", now: 300, leaseUntil: 400)[0]
        // In flight: not requeued.
        #expect(try store.requeue(claim.deliveryID, now: 310) == .inFlight)
        try store.finish(claim, token: "p", outcome: .init(next: .failed, httpStatus: 410, error: "HTTP 410"), now: 320)
        // Failed, requeued by hand: it waits behind the head (message 2), before message 3.
        guard case .queued(let requeued) = try store.requeue(claim.deliveryID, now: 330) else {
            Issue.record("not requeued")
            return
        }
        #expect(requeued.status == .pending && requeued.dueAt == nil && requeued.attempts == 0)
        #expect(try store.requeue(999, now: 330) == .notFound)
        var order: [String] = []
        for t in 0..<3 {
            claim = try store.claim(endpoint: "crm", limit: 5, token: "p", now: 400 + Int64(t), leaseUntil: 900)[0]
            order.append(claim.messageID)
            try store.finish(claim, token: "p", outcome: delivered, now: 400 + Int64(t))
        }
        #expect(order == ["evt_a_2", "evt_a_1", "evt_a_3"])
        // Replay from 200 to a new endpoint, only refunds: message 3 (odd ids are refunds) … and 1 is older.
        let replayed = try store.replay(to: "audit", since: 200, limit: 10, now: 500) { type, _ in type == "refund" }
        #expect(replayed.queued == 1)
        #expect(
            try store.claim(endpoint: "audit", limit: 5, token: "p", now: 500, leaseUntil: 900).map(\.messageID) == ["evt_a_3"])
        // A message stored again is not queued twice.
        #expect(try store.enqueue(message(1, user: "a", version: 1), to: ["crm"], now: 600) == 0)
    }

    @Test(arguments: await testDialects())
    func backlogAndPrune(dialect: Database.Dialect) async throws {
        let db = try await migratedDatabase(dialect)
        let store = WebhookStore(db)
        for n in 1...3 { try store.enqueue(message(n, user: "u\(n)", version: 1, at: Int64(n)), to: ["crm"], now: Int64(n)) }
        let backlog = try store.backlog()
        #expect(backlog["crm"]?.pending == 3 && backlog["crm"]?.oldestCreatedAt == 1)
        let claims = try store.claim(endpoint: "crm", limit: 2, token: "p", now: 10, leaseUntil: 100)
        for c in claims { try store.finish(c, token: "p", outcome: delivered, now: 20) }
        #expect(try store.prune(before: 20) == 0)
        #expect(try store.prune(before: 21) == 2)
        #expect(try store.backlog()["crm"]?.pending == 1)
        #expect(try db.scalarInt("SELECT count(*) FROM webhook_messages") == 1)
    }
}

extension WebhookStoreTests {
    @Test(.enabled("PostgreSQL is not installed here") { await PostgresTestServer.isAvailable() })
    func twoInstancesClaimingAtOnceNeverTakeTheSameDelivery() async throws {
        let url = try await PostgresTestServer.freshDatabase(migrated: true)
        let (a, b) = (try Database(postgresURL: url), try Database(postgresURL: url))
        try b.execute("SET lock_timeout = '2s'")  // without SKIP LOCKED, b would wait on a's rows
        for n in 1...6 {
            try WebhookStore(a).enqueue(message(n, user: "u\(n)", version: 1), to: ["crm"], now: 10)
        }
        // a's claim is still in its transaction when b claims.
        let (first, second) = try a.transaction {
            let first = try WebhookStore(a).claim(endpoint: "crm", limit: 4, token: "a", now: 10, leaseUntil: 100)
            let second = try b.transaction {
                try WebhookStore(b).claim(endpoint: "crm", limit: 10, token: "b", now: 10, leaseUntil: 100)
            }
            return (first, second)
        }
        #expect(first.count == 4 && second.count == 2)
        #expect(Set(first.map(\.deliveryID)).isDisjoint(with: second.map(\.deliveryID)))
    }
}

extension WebhookStoreTests {
    @Test(.enabled("PostgreSQL is not installed here") { await PostgresTestServer.isAvailable() })
    func aDeliveryQueuedWhileItsHeadFinishesOnAnotherConnectionIsNotStranded() async throws {
        let url = try await PostgresTestServer.freshDatabase(migrated: true)
        nonisolated(unsafe) let (a, b) = (try Database(postgresURL: url), try Database(postgresURL: url))
        try WebhookStore(a).enqueue(message(1, user: "u", version: 1), to: ["crm"], now: 10)
        let head = try #require(try WebhookStore(a).claim(endpoint: "crm", limit: 1, token: "p", now: 10, leaseUntil: 100).first)
        // a delivers the head and holds its transaction open until b, queueing the next message,
        // waits for it.
        let (holding, proceed) = (DispatchSemaphore(value: 0), DispatchSemaphore(value: 0))
        async let finished: Void = onItsOwnThread {
            try a.transaction {
                try WebhookStore(a).finish(head, token: "p", outcome: delivered, now: 20)
                holding.signal()
                proceed.waitGuarded()
            }
        }
        await signalled(holding)
        async let queued: Void = onItsOwnThread {
            try b.transaction { _ = try WebhookStore(b).enqueue(message(2, user: "u", version: 2), to: ["crm"], now: 21) }
        }
        #expect(try await waitingForALock(url))
        proceed.signal()
        try await queued
        try await finished
        // The queue has a head: the second message is due (unserialized, it waited behind a head
        // that had just been delivered, and nothing would ever promote it).
        #expect(try WebhookStore(a).nextDue(endpoint: "crm") != nil)
    }
}
