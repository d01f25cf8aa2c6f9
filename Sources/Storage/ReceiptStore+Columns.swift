import DatabaseEngine
package import Entitlements
import Identifiers

// How the receipt tables' rows are read and written: their columns, facts to values and back, and
// the upserts of transactions and renewals.
extension ReceiptStore {
    /// `rawJSON: false` reads an empty text in place of the raw payload, for readers that never
    /// look at it (the charts: a kilobyte a transaction they would copy for nothing).
    static func transactionColumns(_ t: String, rawJSON: Bool = true) -> String {
        [
            "transaction_id", "original_transaction_id", "product_id", "bundle_id", "environment", "purchase_date",
            "original_purchase_date", "expires_date", "cancellation_date", "cancellation_reason", "quantity", "is_trial_period",
            "is_in_intro_offer_period", "is_upgraded", "ownership_type", "subscription_group_id", "web_order_line_item_id",
            "promotional_offer_id", "offer_code_ref_name", "raw_json", "app_account_token", "store", "app_transaction_id",
            "reversed_refund_date", "refund_reversed_at",
        ].map { $0 == "raw_json" && !rawJSON ? "''" : "\(t).\($0)" }.joined(separator: ", ") + ", "
            + commerceColumns.map { "\(t).\($0)" }.joined(separator: ", ")
    }

    /// Where ``transactionColumns(_:rawJSON:)``'s commerce columns begin; the columns a caller
    /// selects after them begin at `transactionCommerceColumn + commerceColumns.count`.
    static let transactionCommerceColumn: Int32 = 25

    /// A transaction's money and terms (Migrations/0016_money.sql), after its other columns.
    static let commerceColumns = [
        "storefront", "offer_type", "offer_discount_type", "offer_period", "transaction_reason", "revocation_type",
        "revocation_percentage", "billing_plan_type", "commitment_period_number", "commitment_total_periods",
        "commitment_price", "commitment_expires_date", "price", "currency", "price_source",
    ]

    /// ``commerceColumns`` but the price's three: the storefront, the offer, the refund, the commitment.
    static let termColumns = Array(commerceColumns.prefix(12))

    static func commerce(_ s: Statement, from c: Int32) -> Commerce {
        var price: Price?
        if let milliunits = s.optionalInt(c + 12), let currency = s.text(c + 13),
            let source = s.text(c + 14).flatMap(PriceSource.init(rawValue:))
        {
            price = Price(milliunits: milliunits, currency: currency, source: source)
        }
        let commitment = Commitment(
            billingPeriodNumber: s.optionalInt(c + 8), totalBillingPeriods: s.optionalInt(c + 9), price: s.optionalInt(c + 10),
            expiresDate: s.optionalInt(c + 11))
        return Commerce(
            price: price, storefront: s.text(c), offerType: s.optionalInt(c + 1), offerDiscountType: s.text(c + 2),
            offerPeriod: s.text(c + 3), transactionReason: s.text(c + 4), revocationType: s.text(c + 5),
            revocationPercentage: s.optionalInt(c + 6), billingPlanType: s.text(c + 7),
            commitment: commitment == Commitment() ? nil : commitment)
    }

    /// storefront … price_source, in ``commerceColumns``' order.
    static func commerceValues(_ c: Commerce) -> [(any StatementValue)?] {
        [
            c.storefront, c.offerType, c.offerDiscountType, c.offerPeriod, c.transactionReason, c.revocationType,
            c.revocationPercentage, c.billingPlanType, c.commitment?.billingPeriodNumber, c.commitment?.totalBillingPeriods,
            c.commitment?.price, c.commitment?.expiresDate, c.price?.milliunits, c.price?.currency, c.price?.source.rawValue,
        ]
    }

    static func purchase(_ s: Statement) -> Stated<Purchase> {
        Stated(
            Purchase(
                transactionID: s.text(0)!, originalTransactionID: s.text(1)!, productID: s.text(2)!,
                purchaseDate: s.optionalInt(5), originalPurchaseDate: s.optionalInt(6), expiresDate: s.optionalInt(7),
                cancellationDate: s.optionalInt(8), cancellationReason: s.text(9), isTrialPeriod: s.int(11) == 1,
                isInIntroOfferPeriod: s.int(12) == 1, isUpgraded: s.int(13) == 1, ownershipType: s.text(14),
                environment: StoreEnvironment(stored: s.text(4)!), subscriptionGroupID: s.text(15),
                promotionalOfferID: s.text(17),
                offerCodeRefName: s.text(18), quantity: s.optionalInt(10), webOrderLineItemID: s.text(16),
                appAccountToken: s.text(20), appTransactionID: s.text(22),
                refundReversal: s.optionalInt(23).flatMap { refunded in
                    s.optionalInt(24).map { RefundReversal(refundedAt: refunded, reversedAt: $0) }
                },
                store: s.text(21).flatMap(Store.named) ?? .appStore,
                commerce: commerce(s, from: transactionCommerceColumn)),
            bundleID: s.text(3)!, rawJSON: s.text(19)!)
    }

    /// transaction_id … offer_code_ref_name, in the column order of `transactions`.
    static func purchaseValues(_ stated: Stated<Purchase>) -> [(any StatementValue)?] {
        let p = stated.fact
        return [
            p.transactionID, p.originalTransactionID, p.productID, stated.bundleID ?? "", p.environment.rawValue, p.purchaseDate,
            p.originalPurchaseDate, p.expiresDate, p.cancellationDate, p.cancellationReason, p.quantity,
            p.isTrialPeriod ? 1 : 0, p.isInIntroOfferPeriod ? 1 : 0, p.isUpgraded ? 1 : 0, p.ownershipType,
            p.subscriptionGroupID, p.webOrderLineItemID, p.promotionalOfferID, p.offerCodeRefName,
        ]
    }

    static func renewalColumns(_ r: String) -> String {
        renewalColumnNames.map { "\(r).\($0)" }.joined(separator: ", ")
    }

    /// The columns both renewal tables have, in the order ``renewal(_:from:)`` reads them.
    static let renewalColumnNames =
        [
            "original_transaction_id", "product_id", "auto_renew_product_id", "auto_renew_status", "expiration_intent",
            "grace_period_expires_date", "is_in_billing_retry_period", "price_consent_status", "price_increase_status",
            "offer_code_ref_name", "promotional_offer_id", "environment", "store_state", "auto_resume_date", "raw_json",
        ] + renewalCommitmentColumns

    /// A commitment plan's renewal info (Migrations/0031), after the raw JSON in both renewal tables' reads.
    static let renewalCommitmentColumns = [
        "renewal_billing_plan_type", "commitment_auto_renew_status", "commitment_auto_renew_product_id",
        "commitment_renewal_date", "commitment_renewal_price", "commitment_renewal_billing_plan_type",
    ]

    static func renewalCommitmentValues(_ r: Renewal) -> [(any StatementValue)?] {
        let c = r.commitment
        return [
            c?.renewalBillingPlanType, c?.autoRenewStatus.map { $0 ? 1 : 0 }, c?.autoRenewProductID, c?.renewalDate,
            c?.renewalPrice, c?.renewalPlanType,
        ]
    }

    static func renewal(_ s: Statement, from c: Int32) -> Stated<Renewal> {
        Stated(
            Renewal(
                originalTransactionID: s.text(c)!, productID: s.text(c + 1), autoRenewProductID: s.text(c + 2),
                autoRenewStatus: s.optionalInt(c + 3).map { $0 == 1 }, expirationIntent: s.optionalInt(c + 4),
                gracePeriodExpiresDate: s.optionalInt(c + 5), isInBillingRetryPeriod: s.optionalInt(c + 6).map { $0 == 1 },
                priceConsentStatus: s.text(c + 7), priceIncreaseStatus: s.text(c + 8), offerCodeRefName: s.text(c + 9),
                promotionalOfferID: s.text(c + 10), environment: StoreEnvironment(stored: s.text(c + 11)!),
                storeState: s.text(c + 12),
                autoResumeDate: s.optionalInt(c + 13), commitment: renewalCommitment(s, from: c + 15)),
            rawJSON: s.text(c + 14)!)
    }

    static func renewalCommitment(_ s: Statement, from c: Int32) -> RenewalCommitment? {
        let commitment = RenewalCommitment(
            renewalBillingPlanType: s.text(c), autoRenewStatus: s.optionalInt(c + 1).map { $0 == 1 },
            autoRenewProductID: s.text(c + 2), renewalDate: s.optionalInt(c + 3), renewalPrice: s.optionalInt(c + 4),
            renewalPlanType: s.text(c + 5))
        return commitment == RenewalCommitment() ? nil : commitment
    }

    /// original_transaction_id … auto_resume_date, in the column order of both renewal tables.
    static func renewalValues(_ r: Renewal) -> [(any StatementValue)?] {
        [
            r.originalTransactionID, r.productID, r.autoRenewProductID, r.autoRenewStatus.map { $0 ? 1 : 0 },
            r.expirationIntent, r.gracePeriodExpiresDate, r.isInBillingRetryPeriod.map { $0 ? 1 : 0 }, r.priceConsentStatus,
            r.priceIncreaseStatus, r.offerCodeRefName, r.promotionalOfferID, r.environment.rawValue, r.storeState,
            r.autoResumeDate,
        ]
    }

    static let insertHistorySQL = """
        INSERT INTO renewal_history (original_transaction_id, product_id, auto_renew_product_id, auto_renew_status,
            expiration_intent, grace_period_expires_date, is_in_billing_retry_period, price_consent_status,
            price_increase_status, offer_code_ref_name, promotional_offer_id, environment, store_state, auto_resume_date,
            raw_json, observed_at, \(renewalCommitmentColumns.joined(separator: ", ")))
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
        """

    /// The most rows one statement upserts; each row count up to it is a statement prepared once
    /// per connection.
    static let rowsPerStatement = 16

    /// `rows` in order, cut into runs of at most ``rowsPerStatement`` in which no key comes twice
    /// (PostgreSQL refuses an upsert that would touch one row twice; a key again starts the next
    /// run, so the later row is still written after the earlier, as one at a time).
    static func batches<Row, Key: Hashable>(of rows: [Row], by key: (Row) -> Key) -> [ArraySlice<Row>] {
        var batches: [ArraySlice<Row>] = []
        var start = rows.startIndex
        var keys = Set<Key>()
        for index in rows.indices {
            if index - start == rowsPerStatement || !keys.insert(key(rows[index])).inserted {
                batches.append(rows[start..<index])
                (start, keys) = (index, [key(rows[index])])
            }
        }
        if start < rows.endIndex { batches.append(rows[start...]) }
        return batches
    }

    /// The columns of a transaction's upsert.
    static let upsertedTransactionColumns = 26 + commerceColumns.count

    // An unchanged row is not rewritten (the WHERE of the upsert), so re-posting changes nothing.
    /// ``upsertTransactionSQL(rows:)`` for each row count up to ``rowsPerStatement``, written
    /// once: built per save, its text was a save's largest allocations.
    static let upsertTransactionSQLs = (0...rowsPerStatement).map(upsertTransactionSQL(rows:))

    static func upsertTransactionSQL(rows: Int) -> String {
        let row = "(" + Array(repeating: "?", count: upsertedTransactionColumns).joined(separator: ", ") + ")"
        return """
            INSERT INTO transactions (transaction_id, original_transaction_id, product_id, bundle_id, environment, purchase_date,
                original_purchase_date, expires_date, cancellation_date, cancellation_reason, quantity, is_trial_period,
                is_in_intro_offer_period, is_upgraded, ownership_type, subscription_group_id, web_order_line_item_id,
                promotional_offer_id, offer_code_ref_name, raw_json, first_seen_at, updated_at, app_account_token, stated_at, store,
                app_transaction_id, \(commerceColumns.joined(separator: ", ")))
            VALUES \(Array(repeating: row, count: rows).joined(separator: ",\n    "))
            \(upsertTransactionConflict)
            """
    }

    /// The statement drops a refund the stored row had: the store reversed it (an upgrade's
    /// cancellation, which is no refund, excepted).
    static let refundReversed = """
        transactions.cancellation_date IS NOT NULL AND excluded.cancellation_date IS NULL AND transactions.is_upgraded = 0
        """

    static let upsertTransactionConflict = """
        ON CONFLICT (transaction_id) DO UPDATE SET original_transaction_id = excluded.original_transaction_id,
            product_id = excluded.product_id, bundle_id = excluded.bundle_id, environment = excluded.environment,
            purchase_date = excluded.purchase_date, original_purchase_date = excluded.original_purchase_date,
            expires_date = excluded.expires_date, cancellation_date = excluded.cancellation_date,
            cancellation_reason = excluded.cancellation_reason, quantity = excluded.quantity,
            is_trial_period = excluded.is_trial_period, is_in_intro_offer_period = excluded.is_in_intro_offer_period,
            is_upgraded = excluded.is_upgraded, ownership_type = excluded.ownership_type,
            subscription_group_id = excluded.subscription_group_id, web_order_line_item_id = excluded.web_order_line_item_id,
            promotional_offer_id = excluded.promotional_offer_id, offer_code_ref_name = excluded.offer_code_ref_name,
            raw_json = excluded.raw_json, updated_at = excluded.updated_at,
            app_account_token = coalesce(excluded.app_account_token, transactions.app_account_token), stated_at = excluded.stated_at,
            store = excluded.store,
            app_transaction_id = coalesce(excluded.app_transaction_id, transactions.app_transaction_id),
            reversed_refund_date = CASE WHEN \(refundReversed) THEN transactions.cancellation_date
                ELSE transactions.reversed_refund_date END,
            refund_reversed_at = CASE WHEN \(refundReversed) THEN excluded.stated_at ELSE transactions.refund_reversed_at END,
            \(keptTerms),
            price = CASE WHEN \(betterPrice) THEN excluded.price ELSE transactions.price END,
            currency = CASE WHEN \(betterPrice) THEN excluded.currency ELSE transactions.currency END,
            price_source = CASE WHEN \(betterPrice) THEN excluded.price_source ELSE transactions.price_source END
        WHERE (transactions.raw_json IS DISTINCT FROM excluded.raw_json OR transactions.environment IS DISTINCT FROM excluded.environment
            OR transactions.bundle_id IS DISTINCT FROM excluded.bundle_id OR \(betterPrice))
            AND excluded.stated_at >= transactions.stated_at
        """

    /// The terms a write sets: a store's signed data states them all (it always names the
    /// storefront), so its row's replace the stored ones; verifyReceipt states none, so a row
    /// from it keeps what Apple's transaction history taught (`receiptd backfill-prices`).
    static let keptTerms = termColumns.map {
        "\($0) = CASE WHEN excluded.storefront IS NULL THEN transactions.\($0) ELSE excluded.\($0) END"
    }.joined(separator: ", ")

    /// Whether the row being written states a price better than the stored one (none, or from a
    /// lower ``PriceSource``): a price is only ever improved, never forgotten.
    static let betterPrice = """
        (excluded.price IS NOT NULL AND (transactions.price IS NULL OR \(priceRank("excluded")) < \(priceRank("transactions"))))
        """

    static func priceRank(_ table: String) -> String {
        "CASE \(table).price_source "
            + PriceSource.allCases.enumerated().map { "WHEN '\($0.element.rawValue)' THEN \($0.offset)" }.joined(separator: " ")
            + " ELSE \(PriceSource.allCases.count) END"
    }

    static let upsertRenewalSQL = """
        INSERT INTO pending_renewal_info (original_transaction_id, product_id, auto_renew_product_id, auto_renew_status,
            expiration_intent, grace_period_expires_date, is_in_billing_retry_period, price_consent_status,
            price_increase_status, offer_code_ref_name, promotional_offer_id, environment, store_state, auto_resume_date,
            raw_json, updated_at, stated_at, \(renewalCommitmentColumns.joined(separator: ", ")))
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
        ON CONFLICT (original_transaction_id) DO UPDATE SET product_id = excluded.product_id,
            auto_renew_product_id = excluded.auto_renew_product_id, auto_renew_status = excluded.auto_renew_status,
            expiration_intent = excluded.expiration_intent, grace_period_expires_date = excluded.grace_period_expires_date,
            is_in_billing_retry_period = excluded.is_in_billing_retry_period,
            price_consent_status = excluded.price_consent_status, price_increase_status = excluded.price_increase_status,
            offer_code_ref_name = excluded.offer_code_ref_name, promotional_offer_id = excluded.promotional_offer_id,
            environment = excluded.environment, store_state = excluded.store_state,
            auto_resume_date = excluded.auto_resume_date, raw_json = excluded.raw_json, updated_at = excluded.updated_at,
            stated_at = excluded.stated_at,
            \(renewalCommitmentColumns.map { "\($0) = excluded.\($0)" }.joined(separator: ", "))
        WHERE (pending_renewal_info.raw_json IS DISTINCT FROM excluded.raw_json
            OR pending_renewal_info.environment IS DISTINCT FROM excluded.environment)
            AND excluded.stated_at >= pending_renewal_info.stated_at
        """

    /// Rewrites a transaction's derived columns (for re-derivation from its raw JSON).
    package func updateColumns(of p: Stated<Purchase>) throws {
        try db.cached(
            """
            UPDATE transactions SET transaction_id = ?, original_transaction_id = ?, product_id = ?, bundle_id = ?,
                environment = ?, purchase_date = ?, original_purchase_date = ?, expires_date = ?, cancellation_date = ?,
                cancellation_reason = ?, quantity = ?, is_trial_period = ?, is_in_intro_offer_period = ?, is_upgraded = ?,
                ownership_type = ?, subscription_group_id = ?, web_order_line_item_id = ?, promotional_offer_id = ?,
                offer_code_ref_name = ?, app_transaction_id = coalesce(?, app_transaction_id),
                \(Self.commerceColumns.map { "\($0) = ?" }.joined(separator: ", "))
            WHERE transaction_id = ?
            """
        ).bind(
            Self.purchaseValues(p) + [p.fact.appTransactionID] + Self.commerceValues(p.fact.commerce) + [p.fact.transactionID]
        ).run()
    }

    /// Rewrites a renewal snapshot's derived columns, and the current row's when it is the newest.
    package func updateColumns(of snapshot: Stated<RenewalObservation>) throws {
        // Every column but the subscription's id and its environment, which a snapshot never changes.
        var values = Self.renewalValues(snapshot.fact.renewal)
        values.remove(at: 11)
        values.removeFirst()
        values += Self.renewalCommitmentValues(snapshot.fact.renewal)
        let columns = """
            product_id = ?, auto_renew_product_id = ?, auto_renew_status = ?, expiration_intent = ?,
            grace_period_expires_date = ?, is_in_billing_retry_period = ?, price_consent_status = ?,
            price_increase_status = ?, offer_code_ref_name = ?, promotional_offer_id = ?, store_state = ?, auto_resume_date = ?,
            \(Self.renewalCommitmentColumns.map { "\($0) = ?" }.joined(separator: ", "))
            """
        try db.cached("UPDATE renewal_history SET \(columns) WHERE id = ?").bind(values + [snapshot.fact.sequence]).run()
        try db.cached("UPDATE pending_renewal_info SET \(columns) WHERE original_transaction_id = ? AND raw_json = ?")
            .bind(values + [snapshot.fact.renewal.originalTransactionID, snapshot.rawJSON]).run()
    }
}
