import DatabaseEngine
import Entitlements
import ReceiptTesting
import Storage
import Testing

@testable import ReceiptCore

/// The one road verified facts take (``SubscriberState/answer(for:database:now:_:)``).
@Suite("The road of verified facts")
struct SubscriberStateRoadTests {
    private let state = SubscriberState(
        settings: EntitlementSettings(
            rules: EntitlementRules(["pro": ["monthly"]]), catalog: Catalog(), policy: DerivationPolicy()))

    /// A save that committed and whose subscriber an erasure took before the answer was read is
    /// the erasure meanwhile (`erased_meanwhile`, 409), never an internal fault. The erasure's
    /// instant is before the save's `now`, as when it was taken before it waited for the save's
    /// locks; both run in the save's transaction here, which commits them in that order.
    @Test(arguments: await testDialects())
    func aSubscriberErasedBetweenTheSaveAndTheReadIsErasedMeanwhile(_ dialect: Database.Dialect) async throws {
        try await withScratchDirectory("receiptd-road") { dir in
            let queue = try await migratedQueue(dialect, in: dir)
            let state = state
            await #expect(throws: ErasedIDs.ErasedMeanwhile.self) {
                _ = try await state.answer(for: "zed", database: queue, now: t0 + day) { db in
                    let saving = try state.save(monthly(autoRenew: true), for: "zed", policy: .transfer, in: db, now: t0 + day)
                    _ = try Erasure(db).erase("zed", by: "test", at: t0)
                    return saving
                }
            }
            // Without the erasure the same save answers with the document.
            let answered = try await state.answer(for: "amy", database: queue, now: t0 + day) { db in
                try state.save(monthly(autoRenew: true), for: "amy", policy: .transfer, in: db, now: t0 + day)
            }
            #expect(answered.document.appUserID == "amy")
        }
    }

    /// A person erased after the work began (while a store was asked) is never written back, nor
    /// written at all when the erasure found nothing of them yet, on either road: in the save's
    /// reads, or (a save sent whole, PostgreSQL) by the server, whose refusal fails the commit and
    /// is the same error.
    @Test(arguments: await testDialects())
    func aPersonErasedWhileTheStoreWasAskedIsErasedMeanwhile(_ dialect: Database.Dialect) async throws {
        try await withScratchDirectory("receiptd-road") { dir in
            let queue = try await migratedQueue(dialect, in: dir)
            let state = state
            _ = try await state.answer(for: "zed", database: queue, now: t0) { db in
                try state.save(monthly(autoRenew: true), for: "zed", policy: .transfer, in: db, now: t0)
            }
            /// A save of `user` begun at `t0 + 5`, before the erasure at `t0 + 10`, under each policy.
            func expectRefused(_ user: String) async throws {
                for policy in [OwnershipPolicy.transfer, .keep] {
                    await #expect(throws: ErasedIDs.ErasedMeanwhile.self) {
                        _ = try await state.answer(for: user, database: queue, now: t0 + day) { db in
                            try state.save(
                                monthly(autoRenew: true), for: user, policy: policy, begun: t0 + 5, in: db, now: t0 + day)
                        }
                    }
                }
                #expect(try await queue.read { try ReceiptStore($0).subscriber(user) } == nil)
            }
            try await queue.write { db in _ = try Erasure(db).erase("zed", by: "test", at: t0 + 10) }
            try await expectRefused("zed")
            // Nobody of that name stored yet, their first POST waiting on the store: the same.
            let found = try await queue.write { db in try Erasure(db).erase("new", by: "test", at: t0 + 10).found }
            #expect(!found)
            try await expectRefused("new")
            // Begun after the erasure, the save stands.
            let answered = try await state.answer(for: "zed", database: queue, now: t0 + day) { db in
                try state.save(monthly(autoRenew: true), for: "zed", policy: .transfer, begun: t0 + 11, in: db, now: t0 + day)
            }
            #expect(answered.document.appUserID == "zed")
        }
    }
}
