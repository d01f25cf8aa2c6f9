import DatabaseEngine
import Entitlements
import Foundation
import Identifiers
import ReceiptTesting
import Testing

@testable import Storage

private func receipt(cancelled: Int64? = nil) -> VerifiedFacts {
    VerifiedFacts(
        environment: .sandbox,
        purchases: [
            Stated(
                Purchase(
                    transactionID: "t1", originalTransactionID: "o1", productID: "monthly", purchaseDate: 1000,
                    originalPurchaseDate: 1000, expiresDate: 2000, isTrialPeriod: true, environment: .sandbox,
                    subscriptionGroupID: "g"),
                bundleID: "com.x", rawJSON: #"{"transaction_id":"t1"}"#),
            Stated(
                Purchase(
                    transactionID: "t2", originalTransactionID: "o1", productID: "monthly", purchaseDate: 2000,
                    originalPurchaseDate: 1000, expiresDate: 3000, cancellationDate: cancelled, environment: .sandbox,
                    subscriptionGroupID: "g"),
                bundleID: "com.x",
                rawJSON: cancelled == nil ? #"{"transaction_id":"t2"}"# : #"{"transaction_id":"t2","c":1}"#),
            Stated(
                Purchase(
                    transactionID: "t3", originalTransactionID: "t3", productID: "lifetime", purchaseDate: 1500,
                    environment: .sandbox),
                bundleID: "com.x", rawJSON: #"{"transaction_id":"t3"}"#),
        ],
        renewals: [
            Stated(
                Renewal(
                    originalTransactionID: "o1", productID: "monthly", autoRenewProductID: "monthly", autoRenewStatus: true,
                    environment: .sandbox),
                rawJSON: #"{"original_transaction_id":"o1"}"#)
        ],
        latestReceipt: "QUJD")
}

@Suite("Receipt store")
struct ReceiptStoreTests {
    /// Runs of at most ``ReceiptStore/rowsPerStatement`` rows, in order, a key again starting the next.
    @Test func rowsAreUpsertedInRunsWithoutAKeyTwice() {
        let most = ReceiptStore.rowsPerStatement
        #expect(ReceiptStore.batches(of: [Int](), by: { $0 }).isEmpty)
        #expect(ReceiptStore.batches(of: [1, 2, 3], by: { $0 }).map(Array.init) == [[1, 2, 3]])
        #expect(ReceiptStore.batches(of: [1, 2, 1, 3, 3], by: { $0 }).map(Array.init) == [[1, 2], [1, 3], [3]])
        let many = Array(0..<(2 * most + 1))
        #expect(ReceiptStore.batches(of: many, by: { $0 }).map(\.count) == [most, most, 1])
        #expect(ReceiptStore.batches(of: many, by: { $0 }).flatMap { $0 } == many)
    }

    /// More transactions than one statement holds, one of them twice (the later wins, as when
    /// they were written one at a time), then the same again: nothing else changes.
    @Test(arguments: await testDialects())
    func manyTransactionsAreSavedAndTheLaterOfTwiceWins(dialect: Database.Dialect) async throws {
        let db = try await migratedDatabase(dialect)
        let store = ReceiptStore(db)
        func renewal(_ n: Int, raw: String? = nil) -> Stated<Purchase> {
            Stated(
                Purchase(
                    transactionID: "t\(n)", originalTransactionID: "t0", productID: "monthly", purchaseDate: Int64(n) * 1000,
                    expiresDate: Int64(n + 1) * 1000, environment: .sandbox),
                bundleID: "com.x", rawJSON: raw ?? #"{"n":\#(n)}"#)
        }
        let count = ReceiptStore.rowsPerStatement * 2 + 3
        let purchases = (0..<count).map { renewal($0) } + [renewal(5, raw: #"{"n":5,"again":true}"#)]
        let facts = VerifiedFacts(environment: .sandbox, purchases: purchases, renewals: [])
        // Every row written (t5 twice) and the purchase acquired.
        #expect(try store.save(facts, for: "alice", now: 10).changes == count + 1 + 1)
        #expect(try store.purchase("t5")?.rawJSON == #"{"n":5,"again":true}"#)
        #expect(try store.purchase("t\(count - 1)")?.fact.purchaseDate == Int64(count - 1) * 1000)
        let subscriber = try #require(try store.subscriber("alice"))
        #expect(subscriber.purchases.count == count)
        // Only t5's two rows, each rewriting the other's: as when they were written one at a time.
        #expect(try store.save(facts, for: "alice", now: 11).changes == 2)
        #expect(try store.purchase("t5")?.rawJSON == #"{"n":5,"again":true}"#)
    }

    /// Who holds each of many purchases, in one statement per 64 of them: in the order asked, nil
    /// for nobody, an id by its bytes (`o1` is held, `O1` is not), an id asked twice answered twice.
    @Test(arguments: await testDialects())
    func ownersAreReadInTheOrderAsked(dialect: Database.Dialect) async throws {
        let db = try await migratedDatabase(dialect)
        let store = ReceiptStore(db)
        try store.addSubscriber("alice", now: 1)
        try store.addSubscriber("bob", now: 1)
        for n in 0..<70 where n % 3 != 0 {
            try db.cached("INSERT INTO ownership (original_transaction_id, app_user_id, since) VALUES (?, ?, 1)")
                .bind(["o\(n)", n % 3 == 1 ? "alice" : "bob"]).run()
        }
        let asked = (0..<70).reversed().map { "o\($0)" } + ["O1", "o1"]
        func holder(_ n: Int) -> String? { n % 3 == 0 ? nil : n % 3 == 1 ? "alice" : "bob" }
        let expected: [String?] = (0..<70).reversed().map(holder) + [nil, "alice"]
        #expect(try store.owners(of: asked) == expected)
        #expect(try store.owners(of: ["o1"]) == ["alice"])
        #expect(try store.owners(of: ["o3", "o2", "o4"]) == [nil, "bob", "alice"])
        #expect(try store.owners(of: []).isEmpty)
        #expect(try asked.map { try store.owner(of: $0) } == expected)
    }

    /// A settle's reads sent ahead (the stored events) are read as the caller would have read them
    /// after it; when the settle writes nothing they are dropped, and a later read of the same
    /// events in the transaction sees what was written since.
    @Test(arguments: await testDialects())
    func readsSentAheadOfASettleAreReadAfterItOrDropped(dialect: Database.Dialect) async throws {
        let db = try await migratedDatabase(dialect)
        func event(_ key: String) -> EventRecord {
            EventRecord(
                key: key, type: "renewal", at: 10, productID: "monthly", originalTransactionID: "o1", transactionID: "t1",
                factsJSON: "{}")
        }
        try db.transaction {
            let store = ReceiptStore(db)
            _ = try store.save(receipt(), for: "ann", now: 100)
            _ = try EventStore(db).replace([event("a")], for: "ann", originals: ["o1"], now: 100)
            // A stale version: nothing written, the read sent ahead dropped.
            #expect(
                try store.settle(
                    "ann", hash: "h", derivedFrom: 1, version: 7, now: 100, ahead: [try EventStore(db).storedEvents(for: "ann")])
                    == nil)
            // b stored by another statement: a read of the events now has a and b.
            try db.execute(
                "INSERT INTO events (app_user_id, event_key, type, at, product_id, original_transaction_id, transaction_id, facts_json, recorded_at) VALUES ('ann', 'b', 'renewal', 10, 'monthly', 'o1', 't1', '{}', 101)"
            )
            #expect(try EventStore(db).replace([event("a"), event("b")], for: "ann", originals: ["o1"], now: 101).isEmpty)
            // The settle written, then the events it read ahead: a and b, so c alone is new.
            #expect(
                try store.settle(
                    "ann", hash: "h", derivedFrom: 1, version: 0, now: 102, ahead: [try EventStore(db).storedEvents(for: "ann")])
                    == 1)
            let changes = try EventStore(db).replace(
                [event("a"), event("b"), event("c")], for: "ann", originals: ["o1"], now: 102)
            #expect(changes.added == 1 && changes.removed == 0 && changes.changed == 0)
        }
        #expect(try EventStore(db).page(for: "ann", limit: 10, before: nil).map(\.key).sorted() == ["a", "b", "c"])
    }

    /// A signed transaction's `appTransactionId` is kept; verifyReceipt, which never states it,
    /// restating the purchase later does not erase it.
    @Test(arguments: await testDialects())
    func keepsTheAppTransactionIDThroughARestatementWithoutIt(dialect: Database.Dialect) async throws {
        let db = try await migratedDatabase(dialect)
        let store = ReceiptStore(db)
        func facts(_ app: String?, raw: String, statedAt: Int64) -> VerifiedFacts {
            VerifiedFacts(
                environment: .production,
                purchases: [
                    Stated(
                        Purchase(
                            transactionID: "t1", originalTransactionID: "t1", productID: "monthly", purchaseDate: 1000,
                            expiresDate: 2000, appTransactionID: app),
                        bundleID: "com.x", rawJSON: raw)
                ], statedAt: statedAt)
        }
        _ = try store.save(facts("704", raw: #"{"appTransactionId":"704"}"#, statedAt: 10), for: "alice", now: 10)
        #expect(try store.purchase("t1")?.fact.appTransactionID == "704")
        _ = try store.save(facts(nil, raw: #"{"transaction_id":"t1","x":1}"#, statedAt: 11), for: "alice", now: 11)
        #expect(try store.purchase("t1")?.rawJSON == #"{"transaction_id":"t1","x":1}"#)
        #expect(try store.purchase("t1")?.fact.appTransactionID == "704")
        #expect(try store.subscriber("alice")?.purchases.first?.fact.appTransactionID == "704")
    }

    /// A statement dropping a refund the stored row had is the store reversing it: when the refund
    /// had taken effect and when it was reversed are kept; an upgrade's cancellation dropped is not.
    @Test(arguments: await testDialects())
    func aRefundStatedAwayIsKeptAsItsReversal(dialect: Database.Dialect) async throws {
        let db = try await migratedDatabase(dialect)
        let store = ReceiptStore(db)
        func facts(_ id: String, cancelled: Int64?, upgraded: Bool = false, statedAt: Int64) -> VerifiedFacts {
            VerifiedFacts(
                environment: .production,
                purchases: [
                    Stated(
                        Purchase(
                            transactionID: id, originalTransactionID: id, productID: "monthly", purchaseDate: 1000,
                            expiresDate: 9000, cancellationDate: cancelled, isUpgraded: upgraded),
                        bundleID: "com.x", rawJSON: #"{"id":"\#(id)","c":\#(cancelled ?? 0)}"#)
                ], statedAt: statedAt)
        }
        _ = try store.save(facts("t1", cancelled: nil, statedAt: 10), for: "alice", now: 10)
        #expect(try store.purchase("t1")?.fact.refundReversal == nil)
        _ = try store.save(facts("t1", cancelled: 5000, statedAt: 20), for: "alice", now: 20)
        #expect(try store.purchase("t1")?.fact.refundReversal == nil)
        _ = try store.save(facts("t1", cancelled: nil, statedAt: 30), for: "alice", now: 30)
        let reversed = RefundReversal(refundedAt: 5000, reversedAt: 30)
        #expect(try store.purchase("t1")?.fact.refundReversal == reversed)
        #expect(try store.subscriber("alice")?.purchases.first?.fact.refundReversal == reversed)
        // Refunded again, then an older statement: neither touches the reversal kept.
        _ = try store.save(facts("t1", cancelled: 7000, statedAt: 40), for: "alice", now: 40)
        _ = try store.save(facts("t1", cancelled: nil, statedAt: 35), for: "alice", now: 41)
        #expect(try store.purchase("t1")?.fact.refundReversal == reversed)
        #expect(try store.purchase("t1")?.fact.cancellationDate == 7000)
        // An upgrade's cancellation stated away is no reversal of a refund.
        _ = try store.save(facts("t2", cancelled: 6000, upgraded: true, statedAt: 50), for: "alice", now: 50)
        _ = try store.save(facts("t2", cancelled: nil, upgraded: true, statedAt: 60), for: "alice", now: 60)
        #expect(try store.purchase("t2")?.fact.refundReversal == nil)
    }

    /// A commitment plan's renewal info is kept in both renewal tables and read back with the
    /// subscriber; migration 0031 fills rows stored before it from their payloads.
    @Test(arguments: await testDialects())
    func aCommitmentsRenewalInfoIsKeptAndFilledFromPayloads(dialect: Database.Dialect) async throws {
        let db = try await migratedDatabase(dialect)
        let store = ReceiptStore(db)
        let commitment = RenewalCommitment(
            renewalBillingPlanType: "MONTHLY", autoRenewStatus: false, autoRenewProductID: "monthly", renewalDate: 9000,
            renewalPrice: 119_880, renewalPlanType: "MONTHLY")
        let facts = VerifiedFacts(
            environment: .production,
            purchases: [
                Stated(
                    Purchase(transactionID: "t1", originalTransactionID: "t1", productID: "monthly", purchaseDate: 1000),
                    bundleID: "com.x", rawJSON: "{}")
            ],
            renewals: [
                Stated(
                    Renewal(originalTransactionID: "t1", productID: "monthly", autoRenewStatus: true, commitment: commitment),
                    rawJSON: #"{"c":1}"#)
            ], statedAt: 5)
        _ = try store.save(facts, for: "cami", now: 10)
        #expect(try store.subscriber("cami")?.renewals.last?.fact.renewal.commitment == commitment)
        #expect(try db.scalarInt("SELECT commitment_auto_renew_status FROM pending_renewal_info") == 0)

        let old = try await emptyDatabase(dialect)
        let all = try Migration.load(from: Migration.directory(for: dialect, under: migrationsDirectory))
        _ = try Migrator(migrations: all.filter { $0.version < 31 }).migrate(old)
        let raw =
            #"{"originalTransactionId":"t1","renewalBillingPlanType":"MONTHLY","commitmentInfo":{"commitmentAutoRenewStatus":1,"commitmentRenewalDate":9000,"commitmentRenewalPrice":119880}}"#
        try old.prepare(
            "INSERT INTO renewal_history (original_transaction_id, environment, raw_json, observed_at) VALUES ('t1', 'production', ?, 1)"
        ).bind([raw]).run()
        _ = try Migrator(migrations: all).migrate(old)
        #expect(try old.scalarText("SELECT renewal_billing_plan_type FROM renewal_history") == "MONTHLY")
        #expect(try old.scalarInt("SELECT commitment_auto_renew_status FROM renewal_history") == 1)
        #expect(try old.scalarInt("SELECT commitment_renewal_price FROM renewal_history") == 119_880)
    }

    /// Migration 0028 fills the column of rows stored before it from their payloads.
    @Test(arguments: await testDialects())
    func theMigrationFillsAppTransactionIDsFromStoredPayloads(dialect: Database.Dialect) async throws {
        let db = try await emptyDatabase(dialect)
        let all = try Migration.load(from: Migration.directory(for: dialect, under: migrationsDirectory))
        _ = try Migrator(migrations: all.filter { $0.version < 28 }).migrate(db)
        for (id, raw) in [("t1", #"{"transactionId":"t1","appTransactionId":"705"}"#), ("t2", #"{"transaction_id":"t2"}"#)] {
            try db.prepare(
                """
                INSERT INTO transactions (transaction_id, original_transaction_id, product_id, bundle_id, environment,
                    is_trial_period, is_in_intro_offer_period, is_upgraded, raw_json, first_seen_at, updated_at)
                VALUES (?, ?, 'monthly', 'com.x', 'production', 0, 0, 0, ?, 1, 1)
                """
            ).bind([id, id, raw]).run()
        }
        _ = try Migrator(migrations: all).migrate(db)
        #expect(try ReceiptStore(db).purchase("t1")?.fact.appTransactionID == "705")
        #expect(try ReceiptStore(db).purchase("t2")?.fact.appTransactionID == nil)
    }

    @Test(arguments: await testDialects())
    func keepsMoneyAndImprovesAPriceNeverForgetsIt(dialect: Database.Dialect) async throws {
        let db = try await migratedDatabase(dialect)
        let store = ReceiptStore(db)
        let commerce = Commerce(
            price: Price(milliunits: 9990, currency: "EUR", source: .client), storefront: "DEU", offerType: 3,
            offerDiscountType: "PAY_AS_YOU_GO", offerPeriod: "P3M", transactionReason: "PURCHASE",
            revocationType: "REFUND_PRORATED", revocationPercentage: 50_000, billingPlanType: "MONTHLY",
            commitment: Commitment(billingPeriodNumber: 2, totalBillingPeriods: 12, price: 119_880, expiresDate: 9000))
        func facts(_ commerce: Commerce, raw: String, statedAt: Int64) -> VerifiedFacts {
            VerifiedFacts(
                environment: .production,
                purchases: [
                    Stated(
                        Purchase(
                            transactionID: "t1", originalTransactionID: "t1", productID: "monthly", purchaseDate: 1000,
                            expiresDate: 2000, commerce: commerce),
                        bundleID: "com.x", rawJSON: raw)
                ], statedAt: statedAt)
        }
        _ = try store.save(facts(commerce, raw: "{}", statedAt: 10), for: "alice", now: 10)
        #expect(try store.purchase("t1")?.fact.commerce == commerce)
        // The same raw facts without a price: the client's price stays.
        var unpriced = commerce
        unpriced.price = nil
        _ = try store.save(facts(unpriced, raw: "{}", statedAt: 11), for: "alice", now: 11)
        #expect(try store.purchase("t1")?.fact.commerce.price == commerce.price)
        // The store's own price replaces the client's; a client's never replaces the store's.
        var signed = commerce
        signed.price = Price(milliunits: 8990, currency: "EUR", source: .store)
        _ = try store.save(facts(signed, raw: #"{"price":8990}"#, statedAt: 12), for: "alice", now: 12)
        #expect(try store.purchase("t1")?.fact.commerce.price == signed.price)
        _ = try store.save(facts(commerce, raw: #"{"price":8990}"#, statedAt: 13), for: "alice", now: 13)
        #expect(try store.purchase("t1")?.fact.commerce.price == signed.price)
        // verifyReceipt states no terms (no storefront): a changed row from it keeps the stored ones.
        _ = try store.save(facts(Commerce(), raw: #"{"cancellation_date_ms":"1"}"#, statedAt: 14), for: "alice", now: 14)
        #expect(try store.purchase("t1")?.fact.commerce == signed)
        // Signed data states them all: a refund reversed drops the revocation.
        var reversed = signed
        (reversed.revocationType, reversed.revocationPercentage) = (nil, nil)
        _ = try store.save(facts(reversed, raw: #"{"reversed":true}"#, statedAt: 15), for: "alice", now: 15)
        #expect(try store.purchase("t1")?.fact.commerce == reversed)
    }

    @Test(arguments: await testDialects())
    func aPriceFromHistoryFillsTheGapsOnceAndMarksThePurchaseAsked(dialect: Database.Dialect) async throws {
        let db = try await migratedDatabase(dialect)
        let store = ReceiptStore(db)
        // alice's receipt: o1 (two renewals, one priced by the client) and t3, from verifyReceipt.
        var facts = receipt()
        facts.purchases[0].fact.commerce.price = Price(milliunits: 1000, currency: "EUR", source: .client)
        _ = try store.save(facts, for: "alice", now: 10)
        let backfill = PriceBackfillStore(db)
        let asked = try backfill.unpriced(after: nil, limit: 10)
        #expect(asked.map(\.originalTransactionID) == ["o1", "t3"] && asked.allSatisfy { $0.bundleID == "com.x" })
        #expect(try backfill.unpriced(after: "o1", limit: 10).map(\.originalTransactionID) == ["t3"])

        let history = Commerce(price: Price(milliunits: 4990, currency: "USD", source: .storeHistory), storefront: "USA")
        let ids = facts.purchases.filter { $0.fact.originalTransactionID == "o1" }.map(\.fact.transactionID)
        let logged = try db.scalarInt("SELECT count(*) FROM changes")
        let result = try backfill.applyHistory(
            ids.map { ($0, history) } + [("unknown", history)], bundleID: "com.x", original: "o1", now: 20)
        #expect(result.holders == ["alice"] && result.priced == ids.count)
        #expect(try db.scalarInt("SELECT count(*) FROM changes") == logged.map { $0 + 1 })
        for id in ids { #expect(try store.purchase(id)?.fact.commerce == history) }
        #expect(try backfill.unpriced(after: nil, limit: 10).map(\.originalTransactionID) == ["t3"])
        // Apple told nothing about t3: asked once, and again only after the asks are forgotten.
        #expect(try backfill.applyHistory([], bundleID: "com.x", original: "t3", now: 21) == ([], 0))
        #expect(try backfill.unpriced(after: nil, limit: 10).isEmpty)
        #expect(try backfill.forgetAsks() == 3)
        #expect(try backfill.unpriced(after: nil, limit: 10).map(\.originalTransactionID) == ["t3"])
        // Never over a signed price.
        let signed = Commerce(price: Price(milliunits: 1, currency: "USD", source: .store), storefront: "USA")
        var t3 = facts.purchases[2]
        (t3.fact.commerce, t3.rawJSON) = (signed, #"{"transaction_id":"t3","signed":1}"#)
        _ = try store.save(VerifiedFacts(environment: .sandbox, purchases: [t3], statedAt: 30), for: "alice", now: 30)
        #expect(try backfill.applyHistory([("t3", history)], bundleID: "com.x", original: "t3", now: 31).priced == 0)
        #expect(try store.purchase("t3")?.fact.commerce == signed)
        #expect(try backfill.unpriced(after: nil, limit: 10).isEmpty)
    }

    @Test(arguments: await testDialects())
    func aGooglePlaySubscriptionsStateAndPauseAreKeptAndRewritten(dialect: Database.Dialect) async throws {
        let db = try await migratedDatabase(dialect)
        let store = ReceiptStore(db)
        let period = Purchase(
            transactionID: "GPA.1", originalTransactionID: "GPT.a", productID: "pro", purchaseDate: 1, expiresDate: 100,
            store: .playStore)
        var renewal = Renewal(
            originalTransactionID: "GPT.a", productID: "pro", autoRenewStatus: true,
            storeState: "SUBSCRIPTION_STATE_PAUSED", autoResumeDate: 500)
        _ = try store.save(
            VerifiedFacts(
                environment: .production, purchases: [Stated(period, bundleID: "com.example.app", rawJSON: "{}")],
                renewals: [Stated(renewal, rawJSON: #"{"a":1}"#)]), for: "alice", now: 10)
        let read = try #require(try store.subscriber("alice"))
        #expect(read.purchases.map(\.fact.store) == [.playStore])
        #expect(read.renewals.map(\.fact.renewal) == [renewal])
        // Rederivation rewrites them, in the history and the current row.
        var snapshot = read.renewals[0]
        renewal.storeState = "SUBSCRIPTION_STATE_ACTIVE"
        renewal.autoResumeDate = nil
        snapshot.fact.renewal = renewal
        try store.updateColumns(of: snapshot)
        #expect(try store.subscriber("alice")?.renewals.map(\.fact.renewal) == [renewal])
        #expect(
            try db.scalarInt("SELECT count(*) FROM pending_renewal_info WHERE store_state = 'SUBSCRIPTION_STATE_ACTIVE'") == 1)
    }

    @Test(arguments: await testDialects())
    func savesAndReadsBackEveryField(dialect: Database.Dialect) async throws {
        let db = try await migratedDatabase(dialect)
        let store = ReceiptStore(db)
        // 3 transactions, 1 renewal, 2 purchases taking their first holder.
        #expect(
            try store.save(receipt(), for: "alice", now: 10) == .init(changes: 6, acquired: ["o1", "t3"], changed: ["alice"]))
        let alice = try #require(try store.subscriber("alice"))
        #expect(alice.purchases == receipt().purchases.sorted { ($0.fact.purchaseDate ?? 0) < ($1.fact.purchaseDate ?? 0) })
        // Each purchase names its store, in the row and read back.
        #expect(alice.purchases.allSatisfy { $0.fact.store == .appStore })
        #expect(try db.scalarInt("SELECT count(*) FROM transactions WHERE store = 'app_store'") == 3)
        #expect(alice.renewals.map(\.fact.renewal) == receipt().renewals.map(\.fact))
        #expect(alice.renewals.map(\.rawJSON) == receipt().renewals.map(\.rawJSON))
        #expect(alice.renewals.map(\.fact.observedAt) == [10])
        #expect(alice.version == 0 && alice.stateHash == nil)
        #expect(alice.factsRevision == 1 && alice.derivedRevision == 0)  // stored, not yet derived
        #expect(
            alice.transfers == [
                Transfer(originalTransactionID: "o1", productID: "monthly", from: nil, to: "alice", at: 10),
                Transfer(originalTransactionID: "t3", productID: "lifetime", from: nil, to: "alice", at: 10),
            ])
        #expect(try store.subscriber("nobody") == nil)
        #expect(try db.scalarText("SELECT receipt_data FROM latest_receipts WHERE original_transaction_id = 'o1'") == "QUJD")
    }

    @Test(arguments: await testDialects())
    func savingTheSameReceiptAgainChangesNothing(dialect: Database.Dialect) async throws {
        let db = try await migratedDatabase(dialect)
        let store = ReceiptStore(db)
        _ = try store.save(receipt(), for: "alice", now: 10)
        let before = try tableSnapshot(db)
        #expect(try store.save(receipt(), for: "alice", now: 99) == .init(changes: 0, acquired: [], changed: []))
        #expect(try tableSnapshot(db) == before)
    }

    @Test(arguments: await testDialects())
    func aChangedTransactionIsUpdated(dialect: Database.Dialect) async throws {
        let db = try await migratedDatabase(dialect)
        let store = ReceiptStore(db)
        _ = try store.save(receipt(), for: "alice", now: 10)
        _ = try store.save(receipt(cancelled: 2500), for: "alice", now: 20)
        let t2 = try #require(try store.subscriber("alice")?.purchases.map(\.fact).first { $0.transactionID == "t2" })
        #expect(t2.cancellationDate == 2500)
        #expect(try db.scalarInt("SELECT updated_at FROM transactions WHERE transaction_id = 't2'") == 20)
        #expect(try db.scalarInt("SELECT first_seen_at FROM transactions WHERE transaction_id = 't2'") == 10)
        #expect(try db.scalarInt("SELECT updated_at FROM transactions WHERE transaction_id = 't1'") == 10)
    }

    @Test(arguments: await testDialects())
    func transferMovesThePurchasesAndRecordsIt(dialect: Database.Dialect) async throws {
        let db = try await migratedDatabase(dialect)
        let store = ReceiptStore(db)
        _ = try store.save(receipt(), for: "alice", now: 10)
        #expect(
            try store.save(receipt(), for: "bob", now: 20)
                == .init(changes: 2, acquired: ["o1", "t3"], changed: ["bob", "alice"]))
        #expect(try store.subscriber("alice")?.factsRevision == 2)  // she lost them: her state is behind too
        #expect(try store.subscriber("bob")?.purchases.count == 3)
        #expect(try store.subscriber("alice")?.purchases.isEmpty == true)
        let transfers = try db.prepare(
            "SELECT original_transaction_id, from_app_user_id, to_app_user_id, at FROM ownership_transfers ORDER BY id")
        var rows: [String] = []
        while try transfers.step() { rows.append((0..<4).map { transfers.text($0) ?? "∅" }.joined(separator: " ")) }
        #expect(rows == ["o1 ∅ alice 10", "t3 ∅ alice 10", "o1 alice bob 20", "t3 alice bob 20"])
    }

    @Test(arguments: await testDialects())
    func theVerificationLogHoldsNoReceipt(dialect: Database.Dialect) async throws {
        let db = try await migratedDatabase(dialect)
        let store = ReceiptStore(db)
        try store.log(
            VerificationLogEntry(
                appUserID: "alice", environment: .sandbox, appleStatus: 0, outcome: "valid", attempts: 2, latencyMs: 31),
            at: 5)
        #expect(
            try db.scalarText("SELECT outcome || ',' || attempts || ',' || latency_ms || ',' || apple_status FROM verifications")
                == "valid,2,31,0")
    }

    @Test(arguments: await testDialects())
    func aChangedRenewalIsAppendedToTheHistory(dialect: Database.Dialect) async throws {
        let db = try await migratedDatabase(dialect)
        let store = ReceiptStore(db)
        _ = try store.save(receipt(), for: "alice", now: 10)
        var off = receipt()
        off.renewals[0].fact.autoRenewStatus = false
        off.renewals[0].rawJSON = #"{"original_transaction_id":"o1","auto_renew_status":"0"}"#
        #expect(try store.save(off, for: "alice", now: 20).changes == 1)
        #expect(try store.save(off, for: "alice", now: 30).changes == 0)
        let history = try #require(try store.subscriber("alice")).renewals.map(\.fact)
        #expect(history.map(\.observedAt) == [10, 20])
        #expect(history.map(\.renewal.autoRenewStatus) == [true, false])
    }

    @Test(arguments: await testDialects())
    func aSubscriberIsReadInSQLitesOrderOfDatesThenIDs(dialect: Database.Dialect) async throws {
        let db = try await migratedDatabase(dialect)
        let store = ReceiptStore(db)
        func purchase(_ id: String, _ original: String, _ product: String, _ date: Int64?) -> Stated<Purchase> {
            Stated(
                Purchase(
                    transactionID: id, originalTransactionID: original, productID: product, purchaseDate: date,
                    environment: .sandbox),
                bundleID: "com.x", rawJSON: "{\"\(id)\":1}")
        }
        let facts = VerifiedFacts(
            environment: .sandbox,
            purchases: [
                purchase("b", "o1", "monthly", 10), purchase("a", "o1", "yearly", 10), purchase("é", "o2", "gems", nil),
                purchase("Z", "o2", "gems", nil), purchase("c", "o1", "monthly", 5),
            ])
        _ = try store.save(facts, for: "ann", now: 1)
        // NULL first, then by date, ties by the id's bytes (as `ORDER BY purchase_date, transaction_id`).
        #expect(try store.subscriber("ann")?.purchases.map(\.fact.transactionID) == ["Z", "é", "c", "a", "b"])
        #expect(ReceiptStore.precedes((nil, "z"), (.min, "a")) && !ReceiptStore.precedes((1, "a"), (nil, "b")))
        _ = try store.save(
            VerifiedFacts(environment: .sandbox, purchases: [purchase("b", "o1", "monthly", 10)]), for: "bob", now: 2)
        // Ann keeps the history of o1, named by its newest transaction's product (`b`, the last of the tie).
        #expect(
            try store.subscriber("ann")?.transfers == [
                Transfer(originalTransactionID: "o1", productID: "monthly", from: nil, to: "ann", at: 1),
                Transfer(originalTransactionID: "o2", productID: "gems", from: nil, to: "ann", at: 1),
                Transfer(originalTransactionID: "o1", productID: "monthly", from: "ann", to: "bob", at: 2),
            ])
        #expect(try store.subscriber("bob")?.transfers.map(\.from) == [nil, "ann"])
    }

    @Test(arguments: await testDialects())
    func settlingIsACompareAndSetOnTheFactsRevisionAndTheVersion(dialect: Database.Dialect) async throws {
        let db = try await migratedDatabase(dialect)
        let store = ReceiptStore(db)
        _ = try store.save(receipt(), for: "alice", now: 10)  // facts revision 1, version 0
        let changesBefore = try db.scalarInt("SELECT count(*) FROM changes")
        #expect(try store.settle("alice", hash: "a", derivedFrom: 1, version: 0, now: 11) == 1)
        #expect(try db.scalarInt("SELECT count(*) FROM changes") == (changesBefore ?? 0) + 1)  // a new version is a change
        // A snapshot from before that write loses, whatever it derived.
        #expect(try store.settle("alice", hash: "b", derivedFrom: 1, version: 0, now: 12) == nil)
        // So does one from before a later write of facts.
        try store.factsChanged(["alice"], at: 13)
        #expect(try store.settle("alice", hash: "b", derivedFrom: 1, version: 1, now: 14) == nil)
        // The same fingerprint from the newest facts: caught up, no new version, no change logged.
        let changesNow = try db.scalarInt("SELECT count(*) FROM changes")
        #expect(try store.settle("alice", hash: "a", derivedFrom: 2, version: 1, now: 15) == 1)
        #expect(try db.scalarInt("SELECT count(*) FROM changes") == changesNow)
        let alice = try #require(try store.subscriber("alice"))
        #expect(alice.stateHash == "a" && alice.version == 1 && alice.factsRevision == 2 && alice.derivedRevision == 2)
        #expect(try store.settle("nobody", hash: "a", derivedFrom: 0, version: 0, now: 16) == nil)
        // The summary's validity goes with a settle that names it, and stays through one that does not.
        let summaryUntil = { try db.scalarInt("SELECT summary_until FROM subscribers WHERE app_user_id = 'alice'") }
        #expect(try store.settle("alice", hash: "c", derivedFrom: 2, version: 1, now: 17, summaryUntil: 700) == 2)
        #expect(try summaryUntil() == 700)
        #expect(try store.settle("alice", hash: "d", derivedFrom: 2, version: 2, now: 18) == 3)
        #expect(try summaryUntil() == 700)
        #expect(try store.settle("alice", hash: "d", derivedFrom: 2, version: 0, now: 19, summaryUntil: 900) == nil)
        #expect(try summaryUntil() == 700)  // a settle that loses writes none of it
    }

    @Test(arguments: await testDialects())
    func unownedFactsAboutAHeldPurchaseMarkItsHolderChanged(dialect: Database.Dialect) async throws {
        let db = try await migratedDatabase(dialect)
        let store = ReceiptStore(db)
        _ = try store.save(receipt(), for: "alice", now: 10)
        let saved = try store.saveUnowned(receipt(cancelled: 2500), now: 20)
        #expect(saved.changes == 1 && saved.changed == ["alice"])
        #expect(try store.subscriber("alice")?.factsRevision == 2)
        #expect(try store.saveUnowned(receipt(cancelled: 2500), now: 30).changed == [])
    }

    @Test(arguments: await testDialects())
    func aSavepointInsideACallersTransactionRollsBackAlone(dialect: Database.Dialect) async throws {
        let db = try await migratedDatabase(dialect)
        try db.transaction {
            _ = try ReceiptStore(db).save(receipt(), for: "alice", now: 10)
            #expect(throws: StorageError.self) { try db.savepoint { try db.execute("INSERT INTO nowhere VALUES (1)") } }
        }
        #expect(try ReceiptStore(db).subscriber("alice")?.purchases.count == 3)
    }
}
