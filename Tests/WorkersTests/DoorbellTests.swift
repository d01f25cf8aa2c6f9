import Testing

@testable import Workers

@Suite("Doorbell: wakes one waiting task")
struct DoorbellTests {
    @Test func aWaitARingEndsLeavesNoRingBehindSoTheNextWaitSleeps() async {
        let doorbell = Doorbell()
        doorbell.ring()
        await doorbell.wait(atMost: .seconds(60))  // the ring ends it; its timer is cancelled
        #expect(!doorbell.isRung)  // a cancelled timer that rang would make the next wait return at once
        await doorbell.wait(atMost: .milliseconds(1))  // nobody rings: the timer ends it
        #expect(!doorbell.isRung)
        doorbell.ring()
        doorbell.ring()
        #expect(doorbell.isRung)  // rings while nobody waits are kept, as one
        await doorbell.wait()
        #expect(!doorbell.isRung)
    }
}
