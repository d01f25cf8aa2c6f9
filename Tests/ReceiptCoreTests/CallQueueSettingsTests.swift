import Testing

@testable import ReceiptCore

@Suite("Call queue settings")
struct CallQueueSettingsTests {
    /// 30 s doubling to an hour, and no overflow however many attempts.
    @Test func backoffDoublesFromItsBaseToItsMaximum() {
        let settings = CallQueueSettings(retryBaseMs: 30_000, retryMaxMs: 3_600_000)
        #expect(
            (0..<8).map { settings.backoff(attempts: $0) } == [
                30_000, 60_000, 120_000, 240_000, 480_000, 960_000, 1_920_000, 3_600_000,
            ])
        #expect(settings.backoff(attempts: 63) == 3_600_000 && settings.backoff(attempts: 1_000_000) == 3_600_000)
    }
}
