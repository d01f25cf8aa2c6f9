import Logging
import Synchronization
import Testing

@testable import Workers

@Suite("Leased queue: claimed, made at once, counted")
struct LeasedQueueTests {
    /// 30 s doubling to an hour, and no overflow however many attempts.
    @Test func backoffDoublesFromItsBaseToItsMaximum() {
        let settings = LeasedQueueSettings(retryBaseMs: 30_000, retryMaxMs: 3_600_000)
        #expect(
            (0..<8).map { settings.backoff(attempts: $0) } == [
                30_000, 60_000, 120_000, 240_000, 480_000, 960_000, 1_920_000, 3_600_000,
            ])
        #expect(settings.backoff(attempts: 63) == 3_600_000 && settings.backoff(attempts: 1_000_000) == 3_600_000)
    }

    /// A queue of numbers: `due` claimed once, each made (recorded), the pass's end counted.
    final class Numbers: LeasedQueue {
        let due: [Int]?
        init(due: [Int]?) { self.due = due }
        let made = Mutex<[Int]>([])
        let ended = Mutex(0)
        let leasing = LeasedQueueSettings(batch: 3)
        let doorbell = Doorbell()
        let quiescence = Quiescence()
        let logger = Logger(label: "test") { _ in SwiftLogNoOpLogHandler() }
        let queueName = "the numbers"
        struct Unreadable: Error {}

        func claimDue() async throws -> [Int] {
            guard let due else { throw Unreadable() }
            return due
        }
        func make(_ chore: Int) async { made.withLock { $0.append(chore) } }
        func passEnded() async { ended.withLock { $0 += 1 } }
    }

    @Test func aPassMakesEveryClaimedChoreAndSaysHowManyItClaimed() async {
        let queue = Numbers(due: [1, 2, 3])
        #expect(await queue.pass() == 3)
        #expect(queue.made.withLock { $0.sorted() } == [1, 2, 3])
        #expect(queue.ended.withLock { $0 } == 1)
    }

    /// A queue whose chores are made one after another: each begins after the last ended.
    final class InTurn: LeasedQueue {
        let order = Mutex<[String]>([])
        let leasing = LeasedQueueSettings(batch: 3)
        let doorbell = Doorbell()
        let quiescence = Quiescence()
        let logger = Logger(label: "test") { _ in SwiftLogNoOpLogHandler() }
        let queueName = "in turn"
        static var makesChoresAtOnce: Bool { false }

        func claimDue() async throws -> [Int] { [1, 2, 3] }
        func make(_ chore: Int) async {
            order.withLock { $0.append("begin \(chore)") }
            await Task.yield()
            order.withLock { $0.append("end \(chore)") }
        }
        func passEnded() async {}
    }

    @Test func aQueueThatSaysSoMakesItsChoresOneAfterAnother() async {
        let queue = InTurn()
        #expect(await queue.pass() == 3)
        #expect(queue.order.withLock { $0 } == ["begin 1", "end 1", "begin 2", "end 2", "begin 3", "end 3"])
    }

    @Test func aQueueThatCannotBeReadMakesNothingAndCountsNone() async {
        let queue = Numbers(due: nil)
        #expect(await queue.pass() == 0)
        #expect(queue.made.withLock { $0 }.isEmpty)
        #expect(queue.ended.withLock { $0 } == 0)  // no backlog is recorded from a queue not read
    }

    @Test func theWorkerStopsOnCancellationAndReleasesWhoWaitsForQuiet() async {
        let queue = Numbers(due: [])
        let worker = Task { await queue.run() }
        await queue.quiescence.wait()  // returns after a quiet pass (nothing due)
        worker.cancel()
        queue.doorbell.ring()
        await worker.value
        await queue.quiescence.wait()  // stopped: returns at once
        #expect(queue.made.withLock { $0 }.isEmpty)
    }
}
