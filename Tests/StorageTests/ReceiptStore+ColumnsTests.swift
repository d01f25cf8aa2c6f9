import DatabaseEngine
import Entitlements
import ReceiptTesting
import Testing

@testable import Storage

/// Issue 62: PostgreSQL no longer checks the environments and flags of the tables every save
/// writes (Migrations/postgresql/0043): the types their writers take must keep what the checks kept.
@Suite("The receipt tables' columns")
struct ReceiptStoreColumnsTests {
    /// Every writer of the five tables (a save with its latest receipt and renewal history, the
    /// verification log, and a re-derivation's rewrite of a transaction and of a renewal snapshot),
    /// over both environments and every value of every flag: each row keeps to the two words and
    /// to 0 and 1, and each word and each flag's every value was written, so the sweep saw them.
    @Test(arguments: await testDialects())
    func everyHotRowKeepsWhatItsDroppedChecksKept(dialect: Database.Dialect) async throws {
        let db = try await migratedDatabase(dialect)
        let store = ReceiptStore(db)
        let maybe: [Bool?] = [true, false, nil]
        var n = 0
        for environment in StoreEnvironment.allCases {
            for bits in 0..<8 {
                n += 1
                let original = "o\(n)"
                let purchase = Purchase(
                    transactionID: "t\(n)", originalTransactionID: original, productID: "monthly", purchaseDate: 1000,
                    expiresDate: 2000, isTrialPeriod: bits & 1 != 0, isInIntroOfferPeriod: bits & 2 != 0,
                    isUpgraded: bits & 4 != 0, environment: environment)
                for step in 0..<2 {
                    let flag = maybe[(bits + step) % 3]
                    let renewal = Renewal(
                        originalTransactionID: original, autoRenewStatus: flag, isInBillingRetryPeriod: maybe[(bits + 1) % 3],
                        environment: environment,
                        commitment: RenewalCommitment(autoRenewStatus: maybe[(bits + 2 + step) % 3], renewalPrice: 1))
                    let facts = VerifiedFacts(
                        environment: environment, purchases: [Stated(purchase, bundleID: "com.x", rawJSON: "{\"n\":\(n)}")],
                        renewals: [Stated(renewal, rawJSON: "{\"n\":\(n),\"step\":\(step)}")], latestReceipt: "R\(step)")
                    _ = try store.save(facts, for: "u\(n)", now: Int64(10 + step))
                }
                try store.log(
                    VerificationLogEntry(
                        appUserID: "u\(n)", environment: bits == 0 ? nil : environment, appleStatus: 0, outcome: "valid",
                        attempts: 1, latencyMs: 1), at: 12)
                // A re-derivation rewrites the columns from the raw JSON, here with the flags turned.
                let records = try #require(try store.subscriber("u\(n)"))
                for var p in records.purchases {
                    p.fact.isTrialPeriod.toggle()
                    p.fact.isUpgraded.toggle()
                    try store.updateColumns(of: p)
                }
                for var r in records.renewals {
                    r.fact.renewal.autoRenewStatus = r.fact.renewal.autoRenewStatus.map { !$0 }
                    try store.updateColumns(of: r)
                }
            }
        }
        let environments = "('production', 'sandbox')"
        func flag(_ column: String) -> String { "\(column) NOT IN (0, 1)" }
        let broken: [(table: String, where: String)] = [
            (
                "transactions",
                "environment NOT IN \(environments) OR \(flag("is_trial_period")) OR \(flag("is_in_intro_offer_period")) "
                    + "OR \(flag("is_upgraded"))"
            ),
            (
                "pending_renewal_info",
                "environment NOT IN \(environments) OR \(flag("auto_renew_status")) OR \(flag("is_in_billing_retry_period")) "
                    + "OR \(flag("commitment_auto_renew_status"))"
            ),
            (
                "renewal_history",
                "environment NOT IN \(environments) OR \(flag("auto_renew_status")) OR \(flag("is_in_billing_retry_period")) "
                    + "OR \(flag("commitment_auto_renew_status"))"
            ),
            ("latest_receipts", "environment NOT IN \(environments)"),
            ("verifications", "environment NOT IN \(environments)"),
        ]
        for (table, condition) in broken {
            #expect(try db.scalarInt("SELECT count(*) FROM \(table) WHERE \(condition)") == 0, "\(table)")
        }
        // What the sweep saw: both words in each table, both values of each flag (and its NULL).
        let seen: [(table: String, column: String, values: Int)] = [
            ("transactions", "environment", 2), ("transactions", "is_trial_period", 2),
            ("transactions", "is_in_intro_offer_period", 2), ("transactions", "is_upgraded", 2),
            ("pending_renewal_info", "environment", 2), ("pending_renewal_info", "auto_renew_status", 3),
            ("pending_renewal_info", "is_in_billing_retry_period", 3),
            ("pending_renewal_info", "commitment_auto_renew_status", 3), ("renewal_history", "environment", 2),
            ("renewal_history", "auto_renew_status", 3), ("renewal_history", "is_in_billing_retry_period", 3),
            ("renewal_history", "commitment_auto_renew_status", 3), ("latest_receipts", "environment", 2),
            ("verifications", "environment", 3),
        ]
        for (table, column, values) in seen {
            let distinct = try db.scalarInt("SELECT count(*) FROM (SELECT DISTINCT \(column) FROM \(table)) d")
            #expect(distinct == Int64(values), "\(table).\(column)")
        }
        #expect(try db.scalarInt("SELECT count(*) FROM renewal_history") == Int64(2 * n))
    }

    /// PostgreSQL's hot tables keep only the price's two checks; SQLite keeps every check, so a
    /// row that breaks one still fails there.
    @Test(arguments: await testDialects())
    func onlyPostgreSQLDropsTheChecks(dialect: Database.Dialect) async throws {
        let db = try await migratedDatabase(dialect)
        switch dialect {
        case .postgresql:
            let checks = try db.scalarText(
                """
                SELECT string_agg(conname, ' ' ORDER BY conname) FROM pg_constraint WHERE contype = 'c'
                    AND conrelid::regclass::text IN
                    ('transactions', 'pending_renewal_info', 'renewal_history', 'latest_receipts', 'verifications')
                """)
            #expect(checks == "transactions_price_check transactions_price_source_check")
        case .sqlite:
            #expect(throws: StorageError.self) {
                try db.execute(
                    "INSERT INTO latest_receipts (original_transaction_id, receipt_data, environment, updated_at) VALUES ('o', 'r', 'xcode', 1)"
                )
            }
        }
    }
}
