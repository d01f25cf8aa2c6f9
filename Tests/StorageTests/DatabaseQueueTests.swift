import Dispatch
import Foundation
import ReceiptTesting
import Testing

@testable import Storage

/// A queue on a scratch file with one table `t (x INTEGER)`.
private func withQueue(readers: Int = 2, _ body: (DatabaseQueue) async throws -> Void) async throws {
    try await withScratchDirectory("receiptd-queue") { dir in
        let queue = try DatabaseQueue(path: dir + "/db.sqlite", readers: readers)
        try await queue.run { db in try db.execute("CREATE TABLE t (x INTEGER)") }
        try await body(queue)
    }
}

private func count(_ db: Database) throws -> Int64 { try db.scalarInt("SELECT count(*) FROM t") ?? -1 }

@Suite("Database queue: readers beside the writer")
struct DatabaseQueueTests {
    @Test func aReadDoesNotWaitForAWriteInProgress() async throws {
        try await withQueue { queue in
            #expect(queue.readerCount == 2)
            let (started, release) = (DispatchSemaphore(value: 0), DispatchSemaphore(value: 0))
            let write = Task {
                try await queue.run { db in
                    try db.transaction {
                        try db.execute("INSERT INTO t VALUES (1)")
                        started.signal()
                        // Held open until the read below is done; a read queued behind this write
                        // would only run after the timeout, and then see the row.
                        _ = release.wait(timeout: .now() + 5)
                    }
                }
            }
            await withCheckedContinuation { continuation in
                Thread {
                    started.wait()
                    continuation.resume()
                }.start()
            }
            #expect(try await queue.read(count) == 0)  // the uncommitted row is not seen, and nothing waited
            release.signal()
            try await write.value
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
                    _ = committed.wait(timeout: .now() + 5)
                    return [first, try count(db)]
                }
            }
            await withCheckedContinuation { continuation in
                Thread {
                    reading.wait()
                    continuation.resume()
                }.start()
            }
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

    @Test func aCachedStatementLeftPartWayHoldsNoSnapshot() async throws {
        try await withQueue { queue in
            try await queue.run { db in try db.execute("INSERT INTO t VALUES (1), (2)") }
            // One row of two read, then the job ends: the statement is reset with it.
            #expect(try await queue.read { db in try db.cached("SELECT x FROM t ORDER BY x").bind([]).step() } == true)
            try await queue.run { db in try db.transaction { try db.execute("INSERT INTO t VALUES (3)") } }
            #expect(try await queue.read(count) == 3)
        }
    }
}
