package import Analytics
package import DatabaseEngine
package import Entitlements
import Foundation
package import Identifiers

/// What the charts read (the transactions of an environment with their holder and app, a page of
/// holders at a time, and each subscription's current renewal info; one customer's for their
/// money) and the exchange rates the operator loaded
/// (Migrations/0016_money.sql).
package struct AnalyticsStore {
    private let db: Database

    package init(_ database: Database) { db = database }

    /// A transaction with who holds its purchase now.
    package struct HeldPurchase: Sendable, Equatable {
        package var appUserID: String
        package var bundleID: String
        package var purchase: Purchase
    }

    /// The renewal info the charts need, per original transaction.
    package struct RenewalRow: Sendable, Equatable {
        package var originalTransactionID: String
        package var autoRenewStatus: Bool?
        package var isInBillingRetryPeriod: Bool?
        package var gracePeriodExpiresDate: Int64?
        /// Google Play's `subscriptionState`, nil for Apple.
        package var storeState: String?
    }

    /// A person as the customers' charts need them besides their purchases: when they were first
    /// seen (their subscriber row's, or an AppTransaction's first storing if earlier), and the app
    /// and environments of their AppTransactions (Migrations/0038_first_seen.sql).
    package struct CustomerRow: Sendable, Equatable {
        package var appUserID: String
        package var firstSeen: Int64
        package var bundleID: String?
        package var environments: [String]
    }

    /// What Apple said of a refund request about a held purchase, and receiptd's answer
    /// (Migrations/0039_refund_requests.sql), with the purchase, to find its holder by.
    package struct RefundRequestRow: Sendable, Equatable {
        package var originalTransactionID: String
        package var event: RefundRequestEvent
    }

    /// What a page of holders, or a list of them, holds and is.
    package struct Holdings: Sendable {
        package var purchases: [HeldPurchase] = []
        package var renewals: [RenewalRow] = []
        package var customers: [CustomerRow] = []
        package var refundRequests: [RefundRequestRow] = []
    }

    /// The transactions of `environment` that `appUserID` holds.
    package func purchases(environment: String, heldBy appUserID: String) throws -> [HeldPurchase] {
        try held(
            db.cached(
                """
                SELECT \(ReceiptStore.transactionColumns("t", rawJSON: false)), o.app_user_id
                FROM ownership o JOIN transactions t ON t.original_transaction_id = o.original_transaction_id
                WHERE o.app_user_id = ? AND t.environment = ?
                """
            ).bind([appUserID, environment]))
    }

    /// A page of people (everyone with a subscriber row: every holder has one), after `after` in
    /// their id's order: up to `limit` ids (the last one, where the next page starts), the
    /// transactions of `environment` (nil: of every environment) they hold, those subscriptions'
    /// renewal info, and who they are as customers. Charts and rollup rebuilds read the whole
    /// database this way, a page at a time, so no more than a page of it is ever in memory.
    package func holders(environment: String?, after: String?, limit: Int) throws -> (last: String?, holdings: Holdings) {
        let users = try db.cached(
            "SELECT app_user_id FROM subscribers WHERE app_user_id > ? ORDER BY app_user_id LIMIT ?"
        ).bind([after ?? "", Int64(limit)])
        var last: String?
        while try users.step() { last = users.text(0) }
        guard let last else { return (nil, Holdings()) }
        let (inEnvironment, bound): (String, [(any StatementValue)?]) =
            environment.map { (" AND t.environment = ?", [after ?? "", last, $0]) } ?? ("", [after ?? "", last])
        var holdings = Holdings()
        holdings.purchases = try held(
            db.cached(
                """
                SELECT \(ReceiptStore.transactionColumns("t", rawJSON: false)), o.app_user_id
                FROM ownership o JOIN transactions t ON t.original_transaction_id = o.original_transaction_id
                WHERE o.app_user_id > ? AND o.app_user_id <= ?\(inEnvironment)
                """
            ).bind(bound))
        let q = try db.cached(
            """
            SELECT \(Self.renewalColumns)
            FROM ownership o JOIN pending_renewal_info p ON p.original_transaction_id = o.original_transaction_id
            WHERE o.app_user_id > ? AND o.app_user_id <= ?\(inEnvironment.replacingOccurrences(of: "t.", with: "p."))
            """
        ).bind(bound)
        while try q.step() { holdings.renewals.append(Self.renewal(q)) }
        holdings.refundRequests = try refundRequests(
            db.cached(Self.refundRequestsHeld + " WHERE o.app_user_id > ? AND o.app_user_id <= ?").bind([after ?? "", last]))
        holdings.customers = try customers(
            db.cached(
                "SELECT app_user_id, coalesce(first_seen_at, created_at) FROM subscribers WHERE app_user_id > ? AND app_user_id <= ?"
            )
            .bind([after ?? "", last]),
            appTransactions: db.cached(
                "SELECT app_user_id, bundle_id, environment, first_seen_at FROM app_transactions WHERE app_user_id > ? AND app_user_id <= ?"
            ).bind([after ?? "", last]))
        return (last, holdings)
    }

    /// Of `users`, those holding a transaction whose storefront (or product, by `split`) is
    /// `value`: every holder with items in that group, and maybe others (a customer's group is
    /// their first purchase's, one of theirs). What a drill-down into one group's figure reads
    /// the ledgers of; someone who bought nothing is in no such group but `unknown`, which the
    /// caller does not narrow by.
    package func holding(_ users: [String], split: RollupSplit, value: String) throws -> Set<Identifier> {
        let column = split == .product ? "t.product_id" : "t.storefront"
        let q = try db.cached(
            """
            SELECT DISTINCT o.app_user_id
            FROM ownership o JOIN transactions t ON t.original_transaction_id = o.original_transaction_id
            WHERE o.app_user_id IN \(Self.inList) AND \(column) = ?
            """)
        var holders: Set<Identifier> = []
        for chunk in Self.inListChunks(users) {
            try q.bind(chunk + [value])
            while try q.step() { holders.insert(Identifier(q.text(0)!)) }
        }
        return holders
    }

    /// Everything `users` hold, in every environment, with those subscriptions' renewal info and
    /// who they are as customers: what the chart rollups recompute changed holders from, and what
    /// a drill-down sums. A hundred holders a statement (a shorter list repeats its last), so one
    /// round trip each.
    package func holdings(of users: [String]) throws -> Holdings {
        let list = Self.inList
        let transactions = try db.cached(
            """
            SELECT \(ReceiptStore.transactionColumns("t", rawJSON: false)), o.app_user_id
            FROM ownership o JOIN transactions t ON t.original_transaction_id = o.original_transaction_id
            WHERE o.app_user_id IN \(list)
            """)
        let renewals = try db.cached(
            """
            SELECT \(Self.renewalColumns)
            FROM ownership o JOIN pending_renewal_info p ON p.original_transaction_id = o.original_transaction_id
            WHERE o.app_user_id IN \(list)
            """)
        let people = try db.cached(
            "SELECT app_user_id, coalesce(first_seen_at, created_at) FROM subscribers WHERE app_user_id IN \(list)")
        let appTransactions = try db.cached(
            "SELECT app_user_id, bundle_id, environment, first_seen_at FROM app_transactions WHERE app_user_id IN \(list)")
        let refunds = try db.cached(Self.refundRequestsHeld + " WHERE o.app_user_id IN \(list)")
        var holdings = Holdings()
        for chunk in Self.inListChunks(users) {
            holdings.purchases += try self.held(transactions.bind(chunk))
            let q = try renewals.bind(chunk)
            while try q.step() { holdings.renewals.append(Self.renewal(q)) }
            holdings.customers += try customers(people.bind(chunk), appTransactions: appTransactions.bind(chunk))
            holdings.refundRequests += try refundRequests(refunds.bind(chunk))
        }
        return holdings
    }

    /// People from their subscriber rows (id, first seen) and their AppTransactions' rows (id,
    /// app, environment, first stored).
    private func customers(_ people: Statement, appTransactions: Statement) throws -> [CustomerRow] {
        var rows: [Identifier: CustomerRow] = [:]
        var order: [Identifier] = []
        while try people.step() {
            let user = Identifier(people.text(0)!)
            if rows[user] == nil { order.append(user) }
            rows[user] = CustomerRow(appUserID: user.string, firstSeen: people.int(1), bundleID: nil, environments: [])
        }
        while try appTransactions.step() {
            let user = Identifier(appTransactions.text(0)!)
            guard var row = rows[user] else { continue }
            row.firstSeen = min(row.firstSeen, appTransactions.int(3))
            if row.bundleID == nil { row.bundleID = appTransactions.text(1) }
            let environment = appTransactions.text(2)!
            if !row.environments.contains(environment) { row.environments.append(environment) }
            rows[user] = row
        }
        return order.map { rows[$0]! }
    }

    /// The refund requests of the purchases some holders hold, the holders chosen by the `WHERE`
    /// that follows.
    static let refundRequestsHeld = """
        SELECT r.original_transaction_id, r.transaction_id, r.kind, r.at, r.answered_at, r.answer, r.reason
        FROM ownership o JOIN refund_requests r ON r.original_transaction_id = o.original_transaction_id
        """

    private func refundRequests(_ q: Statement) throws -> [RefundRequestRow] {
        var rows: [RefundRequestRow] = []
        while try q.step() {
            guard let kind = RefundRequestEvent.Kind(rawValue: q.text(2)!) else { continue }  // none is written so
            rows.append(
                RefundRequestRow(
                    originalTransactionID: q.text(0)!,
                    event: RefundRequestEvent(
                        transactionID: q.text(1)!, kind: kind, at: q.int(3), answeredAt: q.optionalInt(4), answer: q.text(5),
                        reason: q.text(6))))
        }
        return rows
    }

    static let renewalColumns =
        "p.original_transaction_id, p.auto_renew_status, p.is_in_billing_retry_period, p.grace_period_expires_date, p.store_state"

    /// `(?, ?, …)` of ``inListWidth`` placeholders: one statement, prepared once, for any list.
    static let inList = "(" + Array(repeating: "?", count: inListWidth).joined(separator: ", ") + ")"
    static let inListWidth = 100

    /// `values` as ``inList``'s bindings: a hundred at a time, the last chunk filled out with its
    /// last value (a repeat changes nothing an `IN` finds), so one round trip per hundred.
    static func inListChunks(_ values: [String]) -> [[(any StatementValue)?]] {
        stride(from: 0, to: values.count, by: inListWidth).map { start in
            let chunk: [(any StatementValue)?] = Array(values[start..<min(start + inListWidth, values.count)])
            return chunk + Array(repeating: chunk.last!, count: inListWidth - chunk.count)
        }
    }

    private func held(_ q: Statement) throws -> [HeldPurchase] {
        let userColumn = ReceiptStore.transactionCommerceColumn + Int32(ReceiptStore.commerceColumns.count)
        var rows: [HeldPurchase] = []
        while try q.step() {
            let stated = ReceiptStore.purchase(q)
            rows.append(HeldPurchase(appUserID: q.text(userColumn)!, bundleID: stated.bundleID ?? "", purchase: stated.fact))
        }
        return rows
    }

    private static func renewal(_ q: Statement) -> RenewalRow {
        RenewalRow(
            originalTransactionID: q.text(0)!, autoRenewStatus: q.optionalInt(1).map { $0 == 1 },
            isInBillingRetryPeriod: q.optionalInt(2).map { $0 == 1 }, gracePeriodExpiresDate: q.optionalInt(3),
            storeState: q.text(4))
    }

    /// One published rate: units of `currency` per euro on `day` (YYYY-MM-DD), as published.
    package struct RateRow: Sendable, Equatable {
        package var day: String
        package var currency: String
        package var perEuro: String

        package init(day: String, currency: String, perEuro: String) {
            self.day = day
            self.currency = currency
            self.perEuro = perEuro
        }
    }

    /// Every loaded rate.
    package func rates() throws -> [RateRow] {
        let q = try db.cached("SELECT day, currency, per_euro FROM exchange_rates")
        var rows: [RateRow] = []
        while try q.step() { rows.append(RateRow(day: q.text(0)!, currency: q.text(1)!, perEuro: q.text(2)!)) }
        return rows
    }

    /// Loads rates, a later load of a day and currency replacing the earlier (the ECB corrects
    /// rarely, but does), and moves the rates' revision when any changed (the rollups are then
    /// rebuilt, and parsed rates read again). The number of rows new or changed.
    package func importRates(_ rows: [RateRow]) throws -> Int {
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
        if changed > 0 { try db.cached("UPDATE rates_revision SET revision = revision + 1 WHERE id = 1").run() }
        return changed
    }

    /// The rates' revision (Migrations/0022): it moves with every import that changes a rate.
    package func ratesRevision() throws -> Int64 {
        let q = try db.cached("SELECT revision FROM rates_revision WHERE id = 1")
        defer { q.reset() }
        return try q.step() ? q.int(0) : 0
    }
}
