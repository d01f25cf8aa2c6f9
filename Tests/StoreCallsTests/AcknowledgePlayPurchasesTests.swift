import DatabaseEngine
import GooglePlay
import GooglePlaySimulator
import ReceiptService
import ReceiptTesting
import Storage
import Testing
import Workers

@testable import StoreCalls

@Suite("Google Play acknowledgements, owed until made")
struct AcknowledgePlayPurchasesTests {
    static func backlog(_ app: TestApp) async throws -> PlayStore.Backlog {
        try await app.database.read { db in try PlayStore(db).backlog() }
    }

    @Test func aStoredPurchaseIsAcknowledgedByTheWorkerWhenItRings() async throws {
        try await PlayTesting.withPlay { app, _ in
            let worker = Task { await app.playAcknowledgements!.run() }
            let token = app.googlePlay!.purchase(.active, tag: "a")
            _ = try await PlayTesting.post(app, "alice", token)
            #expect(await settled(app.playAcknowledgements!.quiescence))
            #expect(app.googlePlay!.acknowledgement(of: token)?.acknowledged == true)
            #expect(try await Self.backlog(app).unacknowledged == 0)
            worker.cancel()
            await worker.value
        }
    }

    @Test func aLostAcknowledgementIsRetriedWithBackoffAndAcrossARestart() async throws {
        try await PlayTesting.withPlay { app, clock in
            let token = app.googlePlay!.purchase(.active, tag: "a")
            _ = try await PlayTesting.post(app, "alice", token)
            app.googlePlay!.setOutage(milliseconds: 20_000)
            #expect(await app.playAcknowledgements!.pass() == 1)
            #expect(try await Self.backlog(app).retrying == 1)
            // receiptd stops before the retry is due, and starts again on the same database.
            let again = try await app.restarted()
            clock.advance(by: 20_000)  // Google is back, the first retry (30 s) not yet due
            #expect(await again.playAcknowledgements!.pass() == 0)
            #expect(app.googlePlay!.acknowledgement(of: token)?.acknowledged == false)
            clock.advance(by: 10_000)
            #expect(await again.playAcknowledgements!.pass() == 1)
            #expect(app.googlePlay!.acknowledgement(of: token)?.acknowledged == true)
            #expect(
                try await Self.backlog(again)
                    == .init(unacknowledged: 0, oldestUnacknowledgedSince: nil, retrying: 0, unconsumed: 0))
            await again.stop()
        }
    }

    @Test func anAcknowledgedPurchaseIsNotAcknowledgedAgain() async throws {
        try await PlayTesting.withPlay { app, _ in
            let token = app.googlePlay!.purchase(.active, tag: "a")
            _ = try await PlayTesting.post(app, "alice", token)
            await app.playAcknowledgements!.pass()
            let calls = app.googlePlay!.calls["acknowledge"]
            // Read again (Google now says acknowledged), and again with a stale "pending": nothing owed.
            _ = try await PlayTesting.post(app, "alice", token)
            #expect(await app.playAcknowledgements!.pass() == 0)
            #expect(app.googlePlay!.calls["acknowledge"] == calls)
        }
    }

    @Test func backoffDoublesUpToItsMaximum() {
        let settings = AcknowledgePlayPurchases.Settings(retryBaseMs: 30_000, retryMaxMs: 3_600_000)
        #expect(
            (0..<9).map { AcknowledgePlayPurchases.backoff(attempts: $0, settings) } == [
                30_000, 60_000, 120_000, 240_000, 480_000, 960_000, 1_920_000, 3_600_000, 3_600_000,
            ])
        #expect(AcknowledgePlayPurchases.backoff(attempts: 1_000, settings) == 3_600_000)
    }
}
