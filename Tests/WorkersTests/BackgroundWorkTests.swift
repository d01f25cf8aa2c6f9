import Synchronization
import Testing

@testable import Workers

@Suite("Background work: counted while it runs")
struct BackgroundWorkTests {
    @Test func idleReturnsOnceEveryStartedWorkHasEnded() async {
        let work = BackgroundWork()
        await work.idle()  // none: at once
        let gate = Flag()
        let done = Mutex(0)
        for _ in 0..<3 {
            work.start {
                while !gate.isSet { await Task.yield() }
                done.withLock { $0 += 1 }
            }
        }
        #expect(work.running == 3)
        gate.set()
        await work.idle()
        #expect(done.withLock { $0 } == 3 && work.running == 0)
    }
}
