import Entitlements

/// What the charts read (every transaction of an environment with its holder and app, each
/// subscription's current renewal info) and the exchange rates the operator loaded
/// (Migrations/0016_money.sql).
public struct AnalyticsStore {
    private let db: Database

    public init(_ database: Database) { db = database }

    /// A transaction with who holds its purchase now.
    public struct HeldPurchase: Sendable, Equatable {
        public var appUserID: String
        public var bundleID: String
        public var purchase: Purchase
    }

    /// The renewal info the charts need, per original transaction.
    public struct RenewalRow: Sendable, Equatable {
        public var originalTransactionID: String
        public var autoRenewStatus: Bool?
        public var isInBillingRetryPeriod: Bool?
        public var gracePeriodExpiresDate: Int64?
    }

    /// Every held transaction of `environment`.
    public func purchases(environment: String) throws -> [HeldPurchase] {
        try held(
            db.cached(
                """
                SELECT \(ReceiptStore.transactionColumns("t", rawJSON: false)), o.app_user_id
                FROM transactions t JOIN ownership o ON o.original_transaction_id = t.original_transaction_id
                WHERE t.environment = ?
                """
            ).bind([environment]))
    }

    /// The transactions of `environment` that `appUserID` holds.
    public func purchases(environment: String, heldBy appUserID: String) throws -> [HeldPurchase] {
        try held(
            db.cached(
                """
                SELECT \(ReceiptStore.transactionColumns("t", rawJSON: false)), o.app_user_id
                FROM ownership o JOIN transactions t ON t.original_transaction_id = o.original_transaction_id
                WHERE o.app_user_id = ? AND t.environment = ?
                """
            ).bind([appUserID, environment]))
    }

    private func held(_ q: Statement) throws -> [HeldPurchase] {
        let userColumn = Int32(22 + ReceiptStore.commerceColumns.count)
        var rows: [HeldPurchase] = []
        while try q.step() {
            let stated = ReceiptStore.purchase(q)
            rows.append(HeldPurchase(appUserID: q.text(userColumn)!, bundleID: stated.bundleID ?? "", purchase: stated.fact))
        }
        return rows
    }

    public func renewals(environment: String) throws -> [RenewalRow] {
        let q = try db.cached(
            """
            SELECT original_transaction_id, auto_renew_status, is_in_billing_retry_period, grace_period_expires_date
            FROM pending_renewal_info WHERE environment = ?
            """
        ).bind([environment])
        var rows: [RenewalRow] = []
        while try q.step() {
            rows.append(
                RenewalRow(
                    originalTransactionID: q.text(0)!, autoRenewStatus: q.optionalInt(1).map { $0 == 1 },
                    isInBillingRetryPeriod: q.optionalInt(2).map { $0 == 1 }, gracePeriodExpiresDate: q.optionalInt(3)))
        }
        return rows
    }

    /// One published rate: units of `currency` per euro on `day` (YYYY-MM-DD), as published.
    public struct RateRow: Sendable, Equatable {
        public var day: String
        public var currency: String
        public var perEuro: String

        public init(day: String, currency: String, perEuro: String) {
            self.day = day
            self.currency = currency
            self.perEuro = perEuro
        }
    }

    /// Every loaded rate.
    public func rates() throws -> [RateRow] {
        let q = try db.cached("SELECT day, currency, per_euro FROM exchange_rates")
        var rows: [RateRow] = []
        while try q.step() { rows.append(RateRow(day: q.text(0)!, currency: q.text(1)!, perEuro: q.text(2)!)) }
        return rows
    }

    /// Loads rates, a later load of a day and currency replacing the earlier (the ECB corrects
    /// rarely, but does). The number of rows new or changed.
    public func importRates(_ rows: [RateRow]) throws -> Int {
        let upsert = try db.cached(
            """
            INSERT INTO exchange_rates (day, currency, per_euro) VALUES (?, ?, ?)
            ON CONFLICT (day, currency) DO UPDATE SET per_euro = excluded.per_euro
            WHERE exchange_rates.per_euro IS DISTINCT FROM excluded.per_euro
            """)
        var changed = 0
        for row in rows {
            try upsert.bind([row.day, row.currency, row.perEuro]).run()
            changed += db.changes
        }
        return changed
    }
}
