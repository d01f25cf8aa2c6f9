import AppStoreSimulator
import DatabaseEngine
import Entitlements
import Foundation
import ReceiptTesting
import Storage
import Testing

@testable import ReceiptCore
@testable import ReceiptService

private func premiumState(_ body: String) -> String? {
    let json = try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any]
    return ((json?["entitlements"] as? [String: Any])?["premium"] as? [String: Any])?["state"] as? String
}

@Suite("Subscriber document cache", .serialized)
struct SubscriberCacheTests {
    @Test func aCachedAnswerIsByteForByteTheStoredOne() async throws {
        try await withClockedService { app, port, _, _ async throws in
            var stored = 0
            for scenario in Scenario.allCases {
                let user = "cache-\(scenario.rawValue)"
                // Some scenarios are Apple's refusals: nothing stored, nothing cached.
                guard try await postReceipt(port, user: user, "\(scenario.rawValue):\(scenario.rawValue)").status == 200 else {
                    continue
                }
                stored += 1
                let read = try await subscriber(port, user)  // from storage; fills the cache
                let hit = app.documentCache.entry(user, now: TestClock().now) != nil
                #expect(hit, "\(scenario)")
                let cached = try await subscriber(port, user)
                #expect(read.status == 200 && cached.status == 200, "\(scenario)")
                #expect(cached.body == read.body, "\(scenario)")
            }
            #expect(stored > 20)
            #expect(app.documentCache.count == stored)
        }
    }

    /// What the cache rests on: with the same facts, the document reads the same from any instant
    /// until its `changesAt`. Every scenario, read at instants from a year before to a year after.
    @Test func theDocumentIsConstantUntilItsNextInstant() async throws {
        try await withClockedService { app, port, path, clock async throws in
            var scenarios: [Scenario] = []
            for scenario in Scenario.allCases
            where try await postReceipt(port, user: "const-\(scenario.rawValue)", "\(scenario.rawValue):c-\(scenario.rawValue)")
                .status == 200
            {
                scenarios.append(scenario)
            }
            let settings = testConfiguration(path: path).entitlementSettings
            let db = try TestDatabase.open(path)
            let day: Int64 = 86_400_000
            var checked = 0
            for scenario in scenarios {
                let record = try #require(try ReceiptStore(db).subscriber("const-\(scenario.rawValue)"))
                let facts = record.pinnedFacts
                var t = clock.now - 400 * day
                var generator = SystemRandomNumberGenerator()
                while t < clock.now + 400 * day {
                    let document = SubscriberDocument(appUserID: record.appUserID, facts: facts, settings: settings, now: t)
                    guard let next = document.changesAt else { break }
                    #expect(next > t)
                    for probe in [next - 1, Int64.random(in: t..<next, using: &generator)] {
                        let later = SubscriberDocument(appUserID: record.appUserID, facts: facts, settings: settings, now: probe)
                        #expect(later.fingerprint == document.fingerprint, "\(scenario) at \(probe) (read at \(t))")
                        checked += 1
                    }
                    t = next
                }
            }
            #expect(checked > 50)
            _ = app
        }
    }

    @Test func aCachedDocumentStillMovesWithTime() async throws {
        try await withClockedService { app, port, _, clock async throws in
            #expect(try await postReceipt(port, user: "mover", "trial:mover").status == 200)  // ends in 5 days
            #expect(premiumState(try await subscriber(port, "mover").body) == "active")
            #expect(premiumState(try await subscriber(port, "mover").body) == "active")
            clock.advance(by: 6 * 86_400_000)
            #expect(premiumState(try await subscriber(port, "mover").body) == "expired")
            _ = app
        }
    }

    @Test func aWriteVoidsTheCache() async throws {
        try await withClockedService { app, port, _, _ async throws in
            #expect(try await postReceipt(port, user: "writer", "expired_voluntary:w1").status == 200)
            #expect(premiumState(try await subscriber(port, "writer").body) == "expired")
            #expect(premiumState(try await subscriber(port, "writer").body) == "expired")
            #expect(try await postReceipt(port, user: "writer", "active_monthly:w2").status == 200)
            #expect(premiumState(try await subscriber(port, "writer").body) == "active")
            _ = app
        }
    }

    /// Another reader's rendering is kept only beside the reading it was written from, and goes
    /// with it: a write (or an erasure) leaves nothing of it in memory.
    @Test func aCompanionIsKeptWithItsReadingAndGoesWithIt() async throws {
        try await withClockedService { app, port, _, _ async throws in
            #expect(try await postReceipt(port, user: "mate", "active_monthly:m1").status == 200)
            _ = try await subscriber(port, "mate")
            let (entry, _) = try #require(app.readSubscriber.cached("mate"))
            app.readSubscriber.keep("stale", for: "mate", sequence: entry.sequence, version: entry.version + 1)
            #expect(app.readSubscriber.cached("mate")?.entry.companion == nil)
            app.readSubscriber.keep("kept", for: "mate", sequence: entry.sequence, version: entry.version)
            #expect(app.readSubscriber.cached("mate")?.entry.companion as? String == "kept")
            #expect(try await postReceipt(port, user: "mate", "active_monthly:m2").status == 200)
            #expect(app.readSubscriber.cached("mate")?.entry.companion == nil)
        }
    }

    @Test func aWriteForOneUserLeavesOthersCached() async throws {
        try await withClockedService { app, port, _, _ async throws in
            #expect(try await postReceipt(port, user: "reader", "active_monthly:r").status == 200)
            _ = try await subscriber(port, "reader")
            #expect(app.documentCache.entry("reader", now: TestClock().now) != nil)
            #expect(try await postReceipt(port, user: "someone-else", "active_monthly:s").status == 200)
            #expect(app.documentCache.entry("reader", now: TestClock().now) != nil)
        }
    }

    /// Another process writing to the same file (`receiptd rederive`, a second receiptd): its
    /// writes change facts as ours do (their revision moves, their kept document goes, the change
    /// log hears of them), and are heard of within the poll.
    @Test func anotherProcesssWriteIsSeenWithinThePoll() async throws {
        try await withClockedService { app, port, path, _ async throws in
            #expect(try await postReceipt(port, user: "other", "active_monthly:o").status == 200)
            #expect(premiumState(try await subscriber(port, "other").body) == "active")
            #expect(app.documentCache.entry("other", now: TestClock().now) != nil)
            let other = try TestDatabase.open(path)
            try other.transaction {
                try other.execute("UPDATE transactions SET expires_date = 1000, cancellation_date = NULL")
                try ReceiptStore(other).factsChanged(["other"], at: 0)
            }
            #expect(try await eventually { app.documentCache.entry("other", now: TestClock().now) == nil })
            #expect(premiumState(try await subscriber(port, "other").body) == "expired")
        }
    }
}
