import Foundation
import ReceiptTesting
import Testing

@testable import DatabaseEngine
@testable import Storage

/// Reads from a real streaming replica (`pg_basebackup` + a hot standby on loopback): where they
/// go, that a subscriber's own changes are always seen, and that a replica killed, paused or
/// lagging is skipped.
@Suite(
    "Reads from PostgreSQL replicas", .serialized,
    .enabled("PostgreSQL is not installed here") { await PostgresTestServer.isAvailable() })
struct ReplicaSetTests {
    /// A queue on the pair's primary reading from its replica.
    private func queue(_ pair: PostgresStandbyPair, maxLag: Duration = .seconds(1)) throws -> DatabaseQueue {
        try DatabaseQueue(
            postgresURL: pair.primaryURL, connections: 2, readers: 1, replicaURLs: [pair.replicaURL], maxReplicaLag: maxLag)
    }

    /// Records a change of `subscriber` (what every save of theirs appends).
    private func change(_ subscriber: String, on queue: DatabaseQueue) async throws {
        try await queue.write { db in try ChangeLog(db).append(subscriber, at: 0) }
    }

    /// How many changes `subscriber` has as the read sees them, and whether a replica served it.
    private func changes(of subscriber: String, seeing: [String]?, on queue: DatabaseQueue) async throws -> (Int64, Bool) {
        try await queue.read(replicaSeeing: seeing) { db in try Self.count(subscriber, db) }
    }

    @Test func aSubscribersOwnChangesAreAlwaysSeenAndOthersReadTheReplica() async throws {
        let pair = try await PostgresStandbyPair.start()
        defer { pair.stop() }
        let queue = try queue(pair)
        #expect(try await eventually { try await changes(of: "bob", seeing: ["bob"], on: queue).1 })
        // Each change read back at once by a read that must see it: never missed, from the primary
        // or from the replica once it has replayed the change.
        for n in 1...60 {
            try await change("ann", on: queue)
            let (seen, _) = try await changes(of: "ann", seeing: ["ann"], on: queue)
            #expect(seen == Int64(n))
            let (after, _) = try await changes(of: "ann", seeing: ["ann"], on: queue)
            #expect(after == Int64(n))
            // Now and then until the replica has replayed it: from then on, it serves her reads.
            if n % 10 == 0 {
                #expect(try await eventually { try await changes(of: "ann", seeing: ["ann"], on: queue) == (Int64(n), true) })
            }
        }
        // Others never wait for ann's changes; ann is read from the replica once it replayed hers.
        #expect(try await changes(of: "ann", seeing: ["bob"], on: queue).1)
        #expect(try await eventually { try await changes(of: "ann", seeing: ["ann"], on: queue) == (60, true) })
        // The primary when asked for.
        #expect(try await changes(of: "ann", seeing: nil, on: queue) == (60, false))
    }

    /// What a read turns out to depend on (an alias's subscriber) is seen too: a read that found
    /// it depends on someone changed after the replica's position runs again on the primary.
    @Test func aReadDependingOnAnUnreplayedChangeRunsOnThePrimary() async throws {
        let pair = try await PostgresStandbyPair.start()
        defer { pair.stop() }
        let queue = try queue(pair)
        #expect(try await eventually { try await changes(of: "alias", seeing: ["alias"], on: queue).1 })
        // Replay paused, so the replica has certainly not seen the change (a fast replica could
        // replay it before the read, and then serving it there would be right).
        let standby = try Database(postgresURL: pair.replicaURL)
        try standby.execute("SELECT pg_wal_replay_pause()")
        try await change("canonical", on: queue)
        let (seen, replica) = try await queue.read(replicaSeeing: ["alias"]) { db in
            try ReplicaSetTests.count("canonical", db)
        } dependents: { _ in
            ["canonical"]
        }
        try standby.execute("SELECT pg_wal_replay_resume()")
        #expect(seen == 1 && !replica)
    }

    /// A write of this process's that saw another process's change, which this process has not
    /// heard of (a receipt saved again, unchanged, just after another instance stored it), reads
    /// it back: the read goes to the primary, not to a replica that has not replayed it. A POST
    /// answered 500 once for it in the scale drill: the subscriber it had just saved was missing.
    @Test func aWriteThatSawAnotherProcesssChangeReadsItBack() async throws {
        let pair = try await PostgresStandbyPair.start()
        defer { pair.stop() }
        let queue = try queue(pair)
        #expect(try await eventually { try await changes(of: "bob", seeing: ["bob"], on: queue).1 })
        let standby = try Database(postgresURL: pair.replicaURL)
        try standby.execute("SELECT pg_wal_replay_pause()")
        defer { try? standby.execute("SELECT pg_wal_replay_resume()") }
        // Another process's change, unheard here (written without the change log's notification).
        let other = try Database(postgresURL: pair.primaryURL)
        try other.execute("INSERT INTO changes (app_user_id, at) VALUES ('carol', 0)")
        #expect(try await queue.write { db in try Self.count("carol", db) } == (1, false))
        queue.wroteSeeing(["carol"])
        #expect(try await changes(of: "carol", seeing: ["carol"], on: queue) == (1, false))
    }

    /// A replica killed: reads go on at once on the primary, the one under way included; started
    /// again, it serves them again.
    @Test func aKilledReplicaIsSkippedAndUsedAgainOnceBack() async throws {
        let pair = try await PostgresStandbyPair.start()
        defer { pair.stop() }
        let queue = try queue(pair)
        #expect(try await eventually { try await changes(of: "bob", seeing: [], on: queue).1 })
        try pair.killReplica()
        for n in 1...20 {
            try await change("bob", on: queue)
            #expect(try await changes(of: "bob", seeing: [], on: queue) == (Int64(n), false))
        }
        try pair.startReplica()
        #expect(try await eventually { try await changes(of: "bob", seeing: ["bob"], on: queue) == (20, true) })
    }

    /// A replica whose replay is paused falls behind: past the lag bound it serves not even a
    /// list; resumed, it serves again.
    @Test func aReplicaLaggingPastTheBoundIsSkipped() async throws {
        let pair = try await PostgresStandbyPair.start()
        defer { pair.stop() }
        let queue = try queue(pair, maxLag: .milliseconds(300))
        #expect(try await eventually { try await changes(of: "bob", seeing: [], on: queue).1 })
        let replica = try Database(postgresURL: pair.replicaURL)
        try replica.execute("SELECT pg_wal_replay_pause()")
        for _ in 0..<10 { try await change("carol", on: queue) }
        // Its lag grows with the time since the primary passed its position: once past the bound,
        // even a read that needs none of carol's changes goes to the primary.
        #expect(try await eventually { try await changes(of: "bob", seeing: [], on: queue) == (0, false) })
        try replica.execute("SELECT pg_wal_replay_resume()")
        #expect(try await eventually { try await changes(of: "carol", seeing: [], on: queue) == (10, true) })
    }

    /// The changes of `subscriber` the snapshot holds, and whether it is a replica's.
    private static func count(_ subscriber: String, _ db: Database) throws -> (Int64, Bool) {
        let q = try db.cached("SELECT count(*), pg_is_in_recovery() FROM changes WHERE app_user_id = ?")
        defer { q.reset() }
        _ = try q.bind([subscriber]).step()
        return (q.int(0), q.int(1) == 1)
    }
}
