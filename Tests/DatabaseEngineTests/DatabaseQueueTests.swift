import Dispatch
import Foundation
import MetricsTestKit
import ReceiptTesting
import Synchronization
import Testing

@testable import DatabaseEngine
@testable import Storage

/// A queue on a scratch file with one table `t (x INTEGER)`.
private func withQueue(
    readers: Int = 2, metrics: TestMetrics = TestMetrics(), _ body: (DatabaseQueue) async throws -> Void
) async throws {
    try await withScratchDirectory("receiptd-queue") { dir in
        let queue = try DatabaseQueue(path: dir + "/db.sqlite", metrics: metrics, readers: readers)
        try await queue.run { db in try db.execute("CREATE TABLE t (x INTEGER)") }
        try await body(queue)
    }
}

/// Waits for `semaphore` on a thread of its own, never blocking the cooperative pool.
private func count(_ db: Database) throws -> Int64 { try db.scalarInt("SELECT count(*) FROM t") ?? -1 }

/// The calling thread's nice value, as Linux reports it (proc(5): the 19th field of its stat).
private func threadNice() throws -> Int {
    let stat = try String(contentsOfFile: "/proc/thread-self/stat", encoding: .utf8)
    let fields = stat[stat.index(after: stat.lastIndex(of: ")")!)...].split(separator: " ")
    return Int(fields[16])!  // fields from the 3rd (state) on
}

/// Holds every one of `queue`'s `readers` readers in a read until `release` is signalled; returns
/// once all are held.
private func holdReaders(
    _ queue: DatabaseQueue, _ readers: Int, until release: DispatchSemaphore
) async -> [Task<Void, any Error>] {
    let held = DispatchSemaphore(value: 0)
    let tasks = (0..<readers).map { _ in
        Task {
            try await queue.read { _ in
                held.signal()
                release.waitGuarded()
            }
        }
    }
    for _ in 0..<readers { await signalled(held) }
    return tasks
}

/// Starts `job`, which calls `holding()` once it holds what it holds (a transaction, a
/// connection); `holding()` returns when `release` is signalled. Returns once the
/// job holds, with the task to await after the release.
private func held(
    until release: DispatchSemaphore = DispatchSemaphore(value: 0),
    _ job: @escaping @Sendable (_ holding: @escaping @Sendable () -> Void) async throws -> Void
) async -> (release: DispatchSemaphore, task: Task<Void, any Error>) {
    let started = DispatchSemaphore(value: 0)
    let task = Task {
        try await job {
            started.signal()
            release.waitGuarded()
        }
    }
    await signalled(started)
    return (release, task)
}

@Suite("Database queue: readers beside the writer")
struct DatabaseQueueTests {
    @Test func aReadDoesNotWaitForAWriteInProgress() async throws {
        try await withQueue { queue in
            #expect(queue.readerCount == 2)
            // Held open until the read below is done; a read queued behind this write would only
            // run after the timeout, and then see the row.
            let write = await held { holding in
                try await queue.run { db in
                    try db.transaction {
                        try db.execute("INSERT INTO t VALUES (1)")
                        holding()
                    }
                }
            }
            #expect(try await queue.read(count) == 0)  // the uncommitted row is not seen, and nothing waited
            write.release.signal()
            try await write.task.value
            #expect(try await queue.read(count) == 1)  // every commit before the read is seen
        }
    }

    @Test func oneReadIsOneSnapshotWhateverCommitsMeanwhile() async throws {
        try await withQueue { queue in
            let (reading, committed) = (DispatchSemaphore(value: 0), DispatchSemaphore(value: 0))
            let counts = Task {
                try await queue.read { db -> [Int64] in
                    let first = try count(db)
                    reading.signal()
                    committed.waitGuarded()
                    return [first, try count(db)]
                }
            }
            await signalled(reading)
            try await queue.run { db in try db.transaction { try db.execute("INSERT INTO t VALUES (1)") } }
            committed.signal()
            #expect(try await counts.value == [0, 0])
            #expect(try await queue.read(count) == 1)
        }
    }

    @Test func aReaderCannotWrite() async throws {
        try await withQueue { queue in
            await #expect(throws: StorageError.self) { try await queue.read { db in try db.execute("INSERT INTO t VALUES (1)") } }
            let rows = try await queue.read(count)
            #expect(rows == 0)
        }
    }

    @Test func withoutReadersReadsRunOnTheWritersThread() async throws {
        try await withQueue(readers: 0) { queue in
            #expect(queue.readerCount == 0)
            try await queue.run { db in try db.execute("INSERT INTO t VALUES (1)") }
            #expect(try await queue.read(count) == 1)
        }
        let memory = try DatabaseQueue(path: ":memory:")
        #expect(memory.readerCount == 0)  // no other connection sees a private in-memory database
        #expect(try await memory.read { db in try db.scalarInt("SELECT 41 + 1") } == 42)
    }

    @Test func theRollupsHaveAFileAndAWriterOfTheirOwnThatNoSaveWaitsFor() async throws {
        try await withScratchDirectory("receiptd-queue") { dir in
            let queue = try DatabaseQueue(path: dir + "/db.sqlite")
            #expect(FileManager.default.fileExists(atPath: dir + "/db-rollups.sqlite"))
            try await queue.run { db in try db.execute("CREATE TABLE t (x INTEGER)") }
            // The writer held in a transaction: a write of the rollups does not wait for it
            // (it would wait 10 s), and a save does not wait for a write of the rollups.
            let write = await held { holding in
                try await queue.run { db in
                    try db.transaction {
                        try db.execute("INSERT INTO t VALUES (1)")
                        holding()
                    }
                }
            }
            var before = ContinuousClock.now
            try await queue.write(attached: true) { db in
                try RollupStore(db).saveHolderRows([("u1", "rows")])
            }
            #expect(ContinuousClock.now - before < .seconds(5))
            write.release.signal()
            try await write.task.value
            let rollupsWrite = await held { holding in
                try await queue.write(attached: true) { db in
                    try RollupStore(db).saveHolderRows([("u2", "rows")])
                    holding()
                }
            }
            before = ContinuousClock.now
            try await queue.write { db in try db.execute("INSERT INTO t VALUES (2)") }
            #expect(ContinuousClock.now - before < .seconds(5))
            rollupsWrite.release.signal()
            try await rollupsWrite.task.value
            // Readers see both files, as one snapshot each; the database's writer has no rollups.
            let seen = try await queue.read { db in (try count(db), try RollupStore(db).holderRows(["u1", "u2"]).count) }
            #expect(seen == (2, 2))
            await #expect(throws: StorageError.self) { try await queue.run { db in try RollupStore(db).state() } }
        }
    }

    @Test func aRollupsFileOfAnotherVersionOrNoneIsMadeAgain() async throws {
        try await withScratchDirectory("receiptd-queue") { dir in
            let rollups = DatabaseQueue.rollupsPath(for: dir + "/db.sqlite")
            let built = RollupStore.State(fingerprint: "f", phase: .ready, rebuildAfter: nil, changesThrough: 7)
            func opened() async throws -> (RollupStore.State, Int) {
                let queue = try DatabaseQueue(path: dir + "/db.sqlite")
                return try await queue.read { db in (try RollupStore(db).state(), try RollupStore(db).holderRows(["u1"]).count) }
            }
            do {
                let queue = try DatabaseQueue(path: dir + "/db.sqlite")
                try await queue.write(attached: true) { db in
                    try RollupStore(db).saveHolderRows([("u1", "rows")])
                    try RollupStore(db).save(built)
                }
            }
            #expect(try await opened() == (built, 1))  // kept as it is
            try Database(path: rollups).execute("PRAGMA user_version = 0")
            let fresh = RollupStore.State(fingerprint: "", phase: .building, rebuildAfter: nil, changesThrough: 0)
            #expect(try await opened() == (fresh, 0))  // emptied and made again: the keeper rebuilds
            // The last queue's threads close their connections after it is gone; the last to close
            // the rollups' file removes its `-wal` by name, which would be the new file's.
            let files = [rollups, rollups + "-wal", rollups + "-shm"]
            #expect(try await closed(files))
            for file in files { try? FileManager.default.removeItem(atPath: file) }
            #expect(try await opened() == (fresh, 0))  // made when missing
        }
    }

    /// Waits until this process holds none of `paths` open (`/proc/self/fd`).
    private func closed(_ paths: [String]) async throws -> Bool {
        try await eventually {
            let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
            let open = fds.compactMap { try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + $0) }
            return !open.contains(where: paths.contains)
        }
    }

    @Test func theRollupsFileIsNamedAfterTheDatabases() {
        #expect(DatabaseQueue.rollupsPath(for: "data/receiptd.sqlite") == "data/receiptd-rollups.sqlite")
        #expect(DatabaseQueue.rollupsPath(for: "/var/lib/receiptd/db") == "/var/lib/receiptd/db-rollups")
        #expect(DatabaseQueue.rollupsPath(for: "./a.b/c") == "./a.b/c-rollups")
        #expect(DatabaseQueue.rollupsPath(for: ".hidden") == ".hidden-rollups")
    }

    @Test func aBackgroundReadHasAReaderOfItsOwnAtALowerPriority() async throws {
        try await withQueue { queue in
            try await queue.run { db in try db.execute("INSERT INTO t VALUES (1)") }
            #expect(try await queue.read { _ in try threadNice() } == 0)
            // Both readers held: a background read does not wait for them (it would wait 10 s).
            let release = DispatchSemaphore(value: 0)
            let held = await holdReaders(queue, 2, until: release)
            let started = ContinuousClock.now
            let (rows, nice) = try await queue.read(background: true) { db in (try count(db), try threadNice()) }
            #expect(ContinuousClock.now - started < .seconds(5))
            #expect(rows == 1 && nice == Int(DatabaseQueue.backgroundNice))
            await #expect(throws: StorageError.self) {
                try await queue.read(background: true) { db in try db.execute("INSERT INTO t VALUES (2)") }
            }
            for _ in held { release.signal() }
            for task in held { try await task.value }
            #expect(try await queue.read { _ in try threadNice() } == 0)  // the readers' threads keep their priority
        }
    }

    @Test func aCachedStatementLeftPartWayHoldsNoSnapshot() async throws {
        try await withQueue { queue in
            try await queue.run { db in try db.execute("INSERT INTO t VALUES (1), (2)") }
            // One row of two read, then the job ends: the statement is reset with it.
            #expect(try await queue.read { db in try db.cached("SELECT x FROM t ORDER BY x").bind([]).step() } == true)
            try await queue.run { db in try db.transaction { try db.execute("INSERT INTO t VALUES (3)") } }
            #expect(try await queue.read(count) == 3)
        }
    }

    /// Holds the writer with a job that waits for `release`, returns once it runs.
    private func holdWriter(_ queue: DatabaseQueue, until release: DispatchSemaphore) async -> Task<Void, any Error> {
        await held(until: release) { holding in try await queue.run { _ in holding() } }.task
    }

    private struct Refused: Error {}

    @Test func savesThatWaitTogetherShareOneCommitAndFailAlone() async throws {
        let metrics = TestMetrics()
        try await withQueue(metrics: metrics) { queue in
            let release = DispatchSemaphore(value: 0)
            let blocker = await holdWriter(queue, until: release)
            let saves = (0..<10).map { i in
                Task {
                    try await queue.write { db -> Int in
                        try db.execute("INSERT INTO t VALUES (\(i))")
                        if i == 3 { throw Refused() }
                        return i
                    }
                }
            }
            #expect(try await eventually { queue.writerBacklog >= 11 })
            release.signal()
            try await blocker.value
            for (i, save) in saves.enumerated() {
                if i == 3 {
                    await #expect(throws: Refused.self) { try await save.value }
                } else {
                    #expect(try await save.value == i)
                }
            }
            // One transaction for the ten; the refused save's row rolled back alone.
            #expect(try await queue.read { db in try db.scalarInt("SELECT count(*) FROM t WHERE x = 3") } == 0)
            #expect(try await queue.read(count) == 9)
            #expect(try metrics.expectRecorder("database_group_commit_saves").values == [10])
            #expect(
                try metrics.expectTimer("database_write_duration_seconds", [("durability", "normal"), ("outcome", "committed")])
                    .values.count == 1)
        }
    }

    @Test func aWriteAloneCommitsByItselfBetweenTheGroupsAroundIt() async throws {
        let metrics = TestMetrics()
        try await withQueue(metrics: metrics) { queue in
            let release = DispatchSemaphore(value: 0)
            let blocker = await holdWriter(queue, until: release)
            var writes: [Task<Int64, any Error>] = []
            for i in 0..<7 {
                writes.append(
                    Task {
                        try await queue.write(alone: i == 3) { db -> Int64 in
                            try db.execute("INSERT INTO t VALUES (\(i))")
                            if i == 3 { throw Refused() }
                            return Int64(i)
                        }
                    })
                #expect(try await eventually { queue.writerBacklog >= i + 2 })
            }
            release.signal()
            try await blocker.value
            for (i, write) in writes.enumerated() {
                if i == 3 {
                    await #expect(throws: Refused.self) { try await write.value }
                } else {
                    #expect(try await write.value == Int64(i))
                }
            }
            #expect(try await queue.read(count) == 6)
            // Three saves, the one alone (rolled back), three saves: two groups and one transaction of its own.
            #expect(try metrics.expectRecorder("database_group_commit_saves").values == [3, 3])
            #expect(
                try metrics.expectTimer(
                    "database_write_duration_seconds", [("durability", "normal"), ("outcome", "rolled_back")]
                )
                .values.count == 1)
        }
    }

    @Test func oneDurableSaveMakesItsGroupCommitDurable() async throws {
        let metrics = TestMetrics()
        try await withQueue(metrics: metrics) { queue in
            let release = DispatchSemaphore(value: 0)
            let blocker = await holdWriter(queue, until: release)
            let plain = Task { try await queue.write { db in try db.execute("INSERT INTO t VALUES (1)") } }
            let durable = Task { try await queue.write(durable: true) { db in try db.execute("INSERT INTO t VALUES (2)") } }
            #expect(try await eventually { queue.writerBacklog >= 3 })
            release.signal()
            try await blocker.value
            try await plain.value
            try await durable.value
            #expect(
                try metrics.expectTimer("database_write_duration_seconds", [("durability", "full"), ("outcome", "committed")])
                    .values.count == 1)
            #expect(metrics.timers(label: "database_write_duration_seconds", dimensions: [("durability", "normal")]).isEmpty)
            // Back to NORMAL for the next group.
            #expect(try await queue.write { db in try db.scalarInt("PRAGMA synchronous") } == 1)
        }
    }

    @Test func aGroupThatCannotCommitFailsEverySaveInIt() async throws {
        try await withScratchDirectory("receiptd-queue") { dir in
            let queue = try DatabaseQueue(path: dir + "/db.sqlite", busyTimeout: .milliseconds(50))
            try await queue.run { db in try db.execute("CREATE TABLE t (x INTEGER)") }
            // Another connection holds the write lock: the group cannot begin.
            let other = try Database(path: dir + "/db.sqlite")
            try other.execute("BEGIN IMMEDIATE")
            let release = DispatchSemaphore(value: 0)
            let blocker = await holdWriter(queue, until: release)
            let saves = (0..<3).map { i in Task { try await queue.write { db in try db.execute("INSERT INTO t VALUES (\(i))") } }
            }
            #expect(try await eventually { queue.writerBacklog >= 4 })
            release.signal()
            try await blocker.value
            for save in saves { await #expect(throws: StorageError.self) { try await save.value } }
            try other.execute("ROLLBACK")
            try await queue.write { db in try db.execute("INSERT INTO t VALUES (9)") }  // the writer goes on
            #expect(try await queue.read(count) == 1)
        }
    }
}

/// The queue as a pool of PostgreSQL connections: several "processes" (queues) on one database.
@Suite("Database queue on PostgreSQL", .enabled("PostgreSQL is not installed here") { await PostgresTestServer.isAvailable() })
struct PostgresQueueTests {
    /// Two queues on one new database with a counter table.
    private func twoQueues() async throws -> (DatabaseQueue, DatabaseQueue) {
        let url = try await PostgresTestServer.freshDatabase(migrated: true)
        let a = try DatabaseQueue(postgresURL: url, connections: 3)
        let b = try DatabaseQueue(postgresURL: url, connections: 3)
        try await a.run { db in try db.execute("CREATE TABLE counter (k TEXT PRIMARY KEY, n BIGINT NOT NULL)") }
        try await a.run { db in try db.execute("INSERT INTO counter VALUES ('k', 0)") }
        return (a, b)
    }

    @Test func lockedReadThenWriteLosesNoUpdateAcrossConnectionsAndProcesses() async throws {
        let (a, b) = try await twoQueues()
        #expect(a.dialect == .postgresql && a.readerCount == 2)
        // Each save reads the counter, then writes it plus one: without the lock two connections
        // would read the same value and one increment would be lost.
        try await withThrowingTaskGroup(of: Void.self) { group in
            for i in 0..<60 {
                let queue = i % 2 == 0 ? a : b
                group.addTask {
                    try await queue.write { db in
                        try db.lock(["counter:k"])
                        let n = try db.cached("SELECT n FROM counter WHERE k = 'k'").firstInt() ?? -1
                        try db.cached("UPDATE counter SET n = ? WHERE k = 'k'").bind([n + 1]).run()
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(try await b.read { db in try db.scalarInt("SELECT n FROM counter") } == 60)
    }

    @Test func aDeadlockOrSerializationFailureIsRunAgainAndOthersAreNot() throws {
        var calls = 0
        let value = try DatabaseQueue.retryingConflicts { () throws -> Int in
            calls += 1
            if calls < 3 { throw StorageError(.postgres, "deadlock", sqlState: calls == 1 ? "40P01" : "40001") }
            return 7
        }
        #expect(value == 7 && calls == 3)
        calls = 0
        #expect(throws: StorageError.self) {
            try DatabaseQueue.retryingConflicts { () throws -> Int in
                calls += 1
                throw StorageError(.postgres, "unique", sqlState: "23505")
            }
        }
        #expect(calls == 1)
        calls = 0
        #expect(throws: StorageError.self) {
            try DatabaseQueue.retryingConflicts { () throws -> Int in
                calls += 1
                throw StorageError(.postgres, "deadlock", sqlState: "40P01")
            }
        }
        #expect(calls == DatabaseQueue.conflictAttempts)
    }

    @Test func ownChangesAreHeardBeforeTheWriteReturnsOthersWithinMilliseconds() async throws {
        let (a, b) = try await twoQueues()
        let heard = HeardChanges()
        a.followChanges { heard.append($0) }
        // A's own write: heard before the write returns, once (its NOTIFY echo is skipped).
        let mark = try await a.read { db in try ChangeLog(db).last() }
        try await a.write { db in try ChangeLog(db).append("alice", at: 1) }
        #expect(heard.users == ["alice"])
        #expect(heard.changes.allSatisfy { $0.sequence > mark })
        // A rolled-back write tells nobody.
        struct Undo: Error {}
        _ = try? await a.write { db in
            try ChangeLog(db).append("ghost", at: 1)
            throw Undo()
        }
        // B's write (another process): heard through LISTEN.
        let started = ContinuousClock.now
        try await b.write { db in try ChangeLog(db).append("bob", at: 2) }
        let arrived = try await eventually { heard.users.contains("bob") }
        let latency = ContinuousClock.now - started
        #expect(arrived)
        print("a change committed by another process was heard after \(latency)")
        // Changes are heard in the order they committed: once a later one is, nothing of bob's
        // can still be on its way.
        try await b.write { db in try ChangeLog(db).append("carol", at: 3) }
        #expect(try await eventually { heard.users.contains("carol") })
        #expect(heard.users == ["alice", "bob", "carol"])
        let sequences = heard.changes.map(\.sequence)
        #expect(sequences == sequences.sorted() && Set(sequences).count == sequences.count)
    }
}

extension PostgresQueueTests {
    @Test func aLostListeningConnectionIsOpenedAgainAndSaysChangesMayHaveGoneUnheard() async throws {
        let (a, b) = try await twoQueues()
        let heard = HeardChanges()
        let lost = Mutex<[Int64]>([])
        a.followChanges({ heard.append($0) }, lostTrack: { sequence in lost.withLock { $0.append(sequence) } })
        try await a.write { db in try ChangeLog(db).append("before", at: 1) }
        // The server ends every listening connection (a failover, a restart, an administrator).
        try await b.run { db in
            _ = try db.scalarInt(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE query LIKE 'LISTEN%' AND datname = current_database()"
            )
        }
        #expect(try await eventually { !lost.withLock { $0 }.isEmpty })
        #expect(lost.withLock { $0 }.first.map { $0 > heard.changes.last!.sequence } == true)
        // And it listens again.
        try await b.write { db in try ChangeLog(db).append("after", at: 2) }
        #expect(try await eventually { heard.users.contains("after") })
    }
}

extension PostgresQueueTests {
    @Test func readsDoNotWaitForSavesInProgressOrWaitingForAConnection() async throws {
        let url = try await PostgresTestServer.freshDatabase(migrated: true)
        let queue = try DatabaseQueue(postgresURL: url, connections: 2, readers: 1)
        #expect(queue.readerCount == 1)
        let (busy, release) = (DispatchSemaphore(value: 0), DispatchSemaphore(value: 0))
        // Both writing connections held by saves, and two more saves waiting for them.
        let saves = (0..<4).map { i in
            Task {
                try await queue.write { db in
                    try ChangeLog(db).append("u\(i)", at: 1)
                    busy.signal()
                    release.waitGuarded()
                }
            }
        }
        for _ in 0..<2 { await signalled(busy) }
        #expect(try await eventually { queue.writerBacklog >= 4 })
        // A read does not queue behind them (it would wait until they are released, which comes
        // only after it), and sees no uncommitted change.
        #expect(try await queue.read { db in try ChangeLog(db).last() } == 0)
        #expect(queue.writerBacklog >= 4)
        for _ in 0..<4 { release.signal() }
        for save in saves { try await save.value }
        #expect(try await queue.read { db in try db.scalarInt("SELECT count(*) FROM changes") } == 4)
    }

    private struct Refused: Error {}

    /// A queue with one writing connection on a new database with a table `t (x BIGINT)`.
    private func oneWriter(metrics: TestMetrics = TestMetrics()) async throws -> (DatabaseQueue, String) {
        let url = try await PostgresTestServer.freshDatabase(migrated: true)
        let queue = try DatabaseQueue(postgresURL: url, connections: 1, readers: 1, metrics: metrics)
        try await queue.run { db in try db.execute("CREATE TABLE t (x BIGINT)") }
        return (queue, url)
    }

    @Test func savesThatWaitTogetherShareOneCommitAndFailAlone() async throws {
        let metrics = TestMetrics()
        let (queue, _) = try await oneWriter(metrics: metrics)
        let blocker = await held { holding in try await queue.run { _ in holding() } }
        let saves = (0..<10).map { i in
            Task {
                try await queue.write { db -> Int in
                    try db.cached("INSERT INTO t VALUES (?)").bind([i]).run()
                    if i == 3 { throw Refused() }
                    if i == 6 { try db.execute("INSERT INTO nowhere VALUES (1)") }  // a failing statement
                    return i
                }
            }
        }
        #expect(try await eventually { queue.writerBacklog >= 11 })
        blocker.release.signal()
        try await blocker.task.value
        for (i, save) in saves.enumerated() {
            if i == 3 {
                await #expect(throws: Refused.self) { try await save.value }
            } else if i == 6 {
                await #expect(throws: StorageError.self) { try await save.value }
            } else {
                #expect(try await save.value == i)
            }
        }
        let rows = try await queue.read { db in try db.scalarText("SELECT string_agg(x::text, ',' ORDER BY x) FROM t") }
        #expect(rows == "0,1,2,4,5,7,8,9")
        #expect(try metrics.expectRecorder("database_group_commit_saves").values == [10])
        #expect(
            try metrics.expectTimer("database_write_duration_seconds", [("durability", "normal"), ("outcome", "committed")])
                .values.count == 1)
    }

    /// A save with no company is its transaction's only part: no savepoint (a subtransaction, and
    /// two statements), and when it throws, the rollback of its transaction undoes it.
    @Test func aSaveAloneHasNoSavepointAndItsFailureLeavesNothing() async throws {
        let metrics = TestMetrics()
        let (queue, _) = try await oneWriter(metrics: metrics)
        let traffic = try #require(queue.postgresTraffic)
        let before = traffic.current.statements
        #expect(try await queue.write { db in try db.cached("INSERT INTO t VALUES (?)").bind([1]).run() } == ())
        #expect(traffic.current.statements - before == 3, "BEGIN, the insert, COMMIT")
        await #expect(throws: Refused.self) {
            try await queue.write { db in
                try db.cached("INSERT INTO t VALUES (?)").bind([2]).run()
                throw Refused()
            }
        }
        await #expect(throws: StorageError.self) {
            try await queue.write { db in
                try db.cached("INSERT INTO t VALUES (?)").bind([3]).run()
                try db.execute("INSERT INTO nowhere VALUES (1)")
            }
        }
        #expect(try await queue.write { db in try db.cached("INSERT INTO t VALUES (?)").bind([4]).run() } == ())
        let rows = try await queue.read { db in try db.scalarText("SELECT string_agg(x::text, ',' ORDER BY x) FROM t") }
        #expect(rows == "1,4")
        #expect(try metrics.expectRecorder("database_group_commit_saves").values == [1, 1, 1, 1])
    }

    /// Another connection holds `y` and then waits for `x`, which a save of the group holds while
    /// the next save waits for `y`: a cycle, which the server's deadlock check would break only
    /// after `deadlock_timeout` (a second). The waiting save gives up after the group's lock
    /// timeout instead, is rolled back to its savepoint, the group commits (so the other
    /// connection goes on), and it runs again alone and succeeds.
    @Test func aSaveCaughtInALockCycleRunsAgainAloneAfterItsGroup() async throws {
        let (queue, url) = try await oneWriter()
        let other = try Database(postgresURL: url)
        try other.execute("BEGIN")
        try other.lock(["y"])
        let blocker = await held { holding in try await queue.run { _ in holding() } }
        let first = Task { try await queue.write { db in try db.lock(["x"]) } }
        #expect(try await eventually { queue.writerBacklog >= 2 })
        let second = Task {
            try await queue.write { db in
                try db.lock(["y"])
                try db.cached("INSERT INTO t VALUES (?)").bind([2]).run()
            }
        }
        #expect(try await eventually { queue.writerBacklog >= 3 })
        blocker.release.signal()
        try await blocker.task.value
        #expect(try await waitingForALock(url))  // the second save waits for `y` first
        let otherDone = DispatchSemaphore(value: 0)
        nonisolated(unsafe) let blocked = other  // used by that thread alone from here on
        Thread {
            try? blocked.lock(["x"])  // waits for the group's commit
            try? blocked.execute("COMMIT")
            otherDone.signal()
        }.start()
        try await first.value
        try await second.value
        await signalled(otherDone)
        #expect(try await queue.read { db in try db.scalarInt("SELECT count(*) FROM t") } == 1)
    }

    /// A save's writes held back for the next round trip (``Statement/runLater()``) are sent and
    /// checked before its savepoint is released. One that waits past the group's lock timeout
    /// fails in its own save, which is rolled back to its own savepoint and runs again alone; it
    /// never surfaces in the next save, whose rollback would take the first one's work with it
    /// while the first was told it was saved.
    @Test func aHeldWriteThatWaitsTooLongFailsInItsOwnSaveWhichRunsAgainAlone() async throws {
        try await twoSavesInAGroup(waiting: 0)
    }

    /// The group's last save sends its held writes with the commit. When one of them waits past
    /// the group's lock timeout, the commit fails, nothing of the group is stored, and each save
    /// runs again alone: the first is saved at once, the last once the lock is free.
    @Test func aCommitFailedByTheLastSavesHeldWriteRunsEachSaveAgainAlone() async throws {
        try await twoSavesInAGroup(waiting: 1)
    }

    /// Two saves in one group, inserting 1 and 2 into `t`; save `waiting` also holds back an
    /// insert of 7 into `k`, which another connection's transaction holds. The other save is seen
    /// committed while `waiting` waits for the lock alone, and once it is free both are saved.
    private func twoSavesInAGroup(waiting: Int) async throws {
        let (queue, url) = try await oneWriter()
        try await queue.run { db in try db.execute("CREATE TABLE k (x BIGINT PRIMARY KEY)") }
        let other = try Database(postgresURL: url)
        try other.execute("BEGIN")
        try other.execute("INSERT INTO k VALUES (7)")  // a save inserting 7 waits for this transaction
        let blocker = await held { holding in try await queue.run { _ in holding() } }
        var saves: [Task<Void, any Error>] = []
        for i in 0..<2 {
            saves.append(
                Task {
                    try await queue.write { db in
                        try db.cached("INSERT INTO t VALUES (?)").bind([i + 1]).run()
                        if i == waiting { try db.cached("INSERT INTO k VALUES (?)").bind([7]).runLater() }
                    }
                })
            #expect(try await eventually { queue.writerBacklog >= 2 + i })
        }
        blocker.release.signal()
        try await blocker.task.value
        nonisolated(unsafe) let watcher = try Database(postgresURL: url)
        let committed = 2 - waiting  // the save that does not wait
        #expect(try await eventually { try watcher.scalarInt("SELECT count(*) FROM t WHERE x = \(committed)") == 1 })
        #expect(try await waitingForALock(url))
        try other.execute("ROLLBACK")
        for save in saves { try await save.value }
        let rows = try await queue.read { db in try db.scalarText("SELECT string_agg(x::text, ',' ORDER BY x) FROM t") }
        #expect(rows == "1,2")
        #expect(try await queue.read { db in try db.scalarInt("SELECT count(*) FROM k WHERE x = 7") } == 1)
    }

    @Test func aDurableSaveCommitsToDiskWhateverTheServerSays() async throws {
        let url = try await PostgresTestServer.freshDatabase(migrated: true)
        let admin = try Database(postgresURL: url)
        let name = try #require(try admin.scalarText("SELECT current_database()"))
        try admin.execute("ALTER DATABASE \"\(name)\" SET synchronous_commit = off")
        let queue = try DatabaseQueue(postgresURL: url, connections: 1, readers: 0)
        let setting = { @Sendable (db: Database) throws -> String? in
            try db.scalarText("SELECT current_setting('synchronous_commit')")
        }
        #expect(try await queue.write(setting) == "off")
        #expect(try await queue.write(durable: true, setting) == "on")
        #expect(try await queue.write(setting) == "off")
    }

    @Test func aBackgroundReadHasAConnectionOfItsOwnAtALowerPriority() async throws {
        let url = try await PostgresTestServer.freshDatabase(migrated: true)
        let queue = try DatabaseQueue(postgresURL: url, connections: 1, readers: 1)
        try await queue.write { db in try ChangeLog(db).append("u", at: 1) }
        let release = DispatchSemaphore(value: 0)
        let held = await holdReaders(queue, 1, until: release)
        let started = ContinuousClock.now
        let (changes, nice) = try await queue.read(background: true) { db in (try ChangeLog(db).last(), try threadNice()) }
        #expect(ContinuousClock.now - started < .seconds(5))
        #expect(changes == 1 && nice == Int(DatabaseQueue.backgroundNice))
        release.signal()
        try await held[0].value
    }
}

/// What a change observer heard, in order.
private final class HeardChanges: Sendable {
    private let heard = Mutex<[ChangeLog.Change]>([])
    func append(_ changes: [ChangeLog.Change]) { heard.withLock { $0 += changes } }
    var changes: [ChangeLog.Change] { heard.withLock { $0 } }
    var users: [String] { changes.map(\.appUserID) }
}
