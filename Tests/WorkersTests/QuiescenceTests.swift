import Synchronization
import Testing

@testable import Workers

@Suite("Quiescence: a worker tells when it has gone quiet")
struct QuiescenceTests {
    @Test func onlyAQuietPassBegunAfterTheWaitReleasesIt() async {
        let quiescence = Quiescence()
        let before = quiescence.passBegins()  // under way when the wait starts
        let released = Flag()
        let waiting = Task {
            await quiescence.wait()
            released.set()
        }
        // Until the waiter is registered: a pass begun from here on is after it.
        while !quiescence.hasWaiters { await Task.yield() }
        quiescence.passEnded(before, quiet: true)
        let busy = quiescence.passBegins()
        quiescence.passEnded(busy, quiet: false)
        #expect(!released.isSet)
        let quiet = quiescence.passBegins()
        quiescence.passEnded(quiet, quiet: true)
        await waiting.value
        #expect(released.isSet)
    }

    @Test func aStoppedWorkerReleasesEveryWaiterNowAndLater() async {
        let quiescence = Quiescence()
        let waiting = Task { await quiescence.wait() }
        while !quiescence.hasWaiters { await Task.yield() }
        quiescence.stop()
        await waiting.value
        await quiescence.wait()  // returns at once
    }

    @Test func aCancelledWaitReturns() async {
        let quiescence = Quiescence()
        let waiting = Task { await quiescence.wait() }
        waiting.cancel()
        await waiting.value
        #expect(!quiescence.hasWaiters)
    }
}

/// A flag tasks share.
final class Flag: Sendable {
    private let value = Mutex(false)
    func set() { value.withLock { $0 = true } }
    var isSet: Bool { value.withLock { $0 } }
}
