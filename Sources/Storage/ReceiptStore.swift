/// Reads and writes what Apple said about receipts (Migrations/0002_receipts.sql). Synchronous:
/// use it inside `DatabaseQueue.run`.
public struct ReceiptStore {
    /// How a save ended.
    public enum SaveOutcome: Sendable, Equatable {
        case saved
        /// Under `OwnershipPolicy.keep`, another user already holds one of the receipt's purchases.
        /// Nothing was written.
        case receiptInUse(heldBy: String)
    }

    private let db: Database

    public init(_ database: Database) { db = database }

    /// Stores a verified receipt for `appUserID` in one write transaction. Re-saving the same
    /// receipt changes no row. Ownership of each original transaction goes to `appUserID` under
    /// `.transfer` (recorded), or the save is refused under `.keep` when someone else holds it.
    /// `log`, when given, is written in the same transaction (even when `.keep` refuses the save).
    public func save(
        _ receipt: VerifiedReceiptRecord, for appUserID: String, policy: OwnershipPolicy, now: Int64,
        log: VerificationLogEntry? = nil
    ) throws -> SaveOutcome {
        try db.transaction { () throws -> SaveOutcome in
            if let log { try self.log(log, at: now) }
            var originals: [String] = []
            for t in receipt.transactions where !originals.contains(t.originalTransactionID) {
                originals.append(t.originalTransactionID)
            }
            let holderQuery = try db.prepare("SELECT app_user_id FROM ownership WHERE original_transaction_id = ?")
            var takeOver: [(original: String, from: String?)] = []
            for original in originals {
                try holderQuery.bind([original])
                let holder = try holderQuery.step() ? holderQuery.text(0) : nil
                if holder == appUserID { continue }
                if let holder, policy == .keep { return .receiptInUse(heldBy: holder) }
                takeOver.append((original, holder))
            }
            // Only now that the save will go ahead: `.keep`'s refusal above must write nothing.
            try db.prepare("INSERT OR IGNORE INTO subscribers (app_user_id, created_at, updated_at) VALUES (?, ?, ?)")
                .bind([appUserID, now, now]).run()
            for (original, from) in takeOver {
                try db.prepare(
                    """
                    INSERT INTO ownership (original_transaction_id, app_user_id, since) VALUES (?, ?, ?)
                    ON CONFLICT (original_transaction_id) DO UPDATE SET app_user_id = excluded.app_user_id, since = excluded.since
                    """
                ).bind([original, appUserID, now]).run()
                try db.prepare(
                    "INSERT INTO ownership_transfers (original_transaction_id, from_app_user_id, to_app_user_id, at) VALUES (?, ?, ?, ?)"
                ).bind([original, from, appUserID, now]).run()
            }

            let upsertTransaction = try db.prepare(Self.upsertTransactionSQL)
            for t in receipt.transactions {
                try upsertTransaction.bind([
                    t.transactionID, t.originalTransactionID, t.productID, t.bundleID, t.environment, t.purchaseDate,
                    t.originalPurchaseDate, t.expiresDate, t.cancellationDate, t.cancellationReason, t.quantity,
                    t.isTrialPeriod ? 1 : 0, t.isInIntroOfferPeriod ? 1 : 0, t.isUpgraded ? 1 : 0, t.ownershipType,
                    t.subscriptionGroupID, t.webOrderLineItemID, t.promotionalOfferID, t.offerCodeRefName, t.rawJSON, now, now,
                ]).run()
            }
            let upsertRenewal = try db.prepare(Self.upsertRenewalSQL)
            for r in receipt.renewals {
                try upsertRenewal.bind([
                    r.originalTransactionID, r.productID, r.autoRenewProductID, r.autoRenewStatus.map { $0 ? 1 : 0 },
                    r.expirationIntent, r.gracePeriodExpiresDate, r.isInBillingRetryPeriod.map { $0 ? 1 : 0 },
                    r.priceConsentStatus, r.priceIncreaseStatus, r.offerCodeRefName, r.promotionalOfferID, r.environment,
                    r.rawJSON, now,
                ]).run()
            }
            if let latest = receipt.latestReceipt {
                let upsertLatest = try db.prepare(
                    """
                    INSERT INTO latest_receipts (original_transaction_id, receipt_data, environment, updated_at) VALUES (?, ?, ?, ?)
                    ON CONFLICT (original_transaction_id) DO UPDATE SET receipt_data = excluded.receipt_data,
                        environment = excluded.environment, updated_at = excluded.updated_at
                    WHERE receipt_data IS NOT excluded.receipt_data OR environment IS NOT excluded.environment
                    """)
                for original in originals { try upsertLatest.bind([original, latest, receipt.environment, now]).run() }
            }
            return .saved
        }
    }

    /// The subscriber and every transaction and renewal of the purchases they hold; nil when unknown.
    public func subscriber(_ appUserID: String) throws -> SubscriberRecord? {
        let exists = try db.prepare("SELECT 1 FROM subscribers WHERE app_user_id = ?").bind([appUserID])
        guard try exists.step() else { return nil }
        let transactions = try db.prepare(
            """
            SELECT t.transaction_id, t.original_transaction_id, t.product_id, t.bundle_id, t.environment, t.purchase_date,
                   t.original_purchase_date, t.expires_date, t.cancellation_date, t.cancellation_reason, t.quantity,
                   t.is_trial_period, t.is_in_intro_offer_period, t.is_upgraded, t.ownership_type, t.subscription_group_id,
                   t.web_order_line_item_id, t.promotional_offer_id, t.offer_code_ref_name, t.raw_json
            FROM transactions t JOIN ownership o ON o.original_transaction_id = t.original_transaction_id
            WHERE o.app_user_id = ? ORDER BY t.purchase_date, t.transaction_id
            """
        ).bind([appUserID])
        var records: [TransactionRecord] = []
        while try transactions.step() {
            let s = transactions
            records.append(
                TransactionRecord(
                    transactionID: s.text(0)!, originalTransactionID: s.text(1)!, productID: s.text(2)!, bundleID: s.text(3)!,
                    environment: s.text(4)!, purchaseDate: s.optionalInt(5), originalPurchaseDate: s.optionalInt(6),
                    expiresDate: s.optionalInt(7), cancellationDate: s.optionalInt(8), cancellationReason: s.text(9),
                    quantity: s.optionalInt(10), isTrialPeriod: s.int(11) == 1, isInIntroOfferPeriod: s.int(12) == 1,
                    isUpgraded: s.int(13) == 1, ownershipType: s.text(14), subscriptionGroupID: s.text(15),
                    webOrderLineItemID: s.text(16), promotionalOfferID: s.text(17), offerCodeRefName: s.text(18),
                    rawJSON: s.text(19)!))
        }
        let renewals = try db.prepare(
            """
            SELECT r.original_transaction_id, r.product_id, r.auto_renew_product_id, r.auto_renew_status, r.expiration_intent,
                   r.grace_period_expires_date, r.is_in_billing_retry_period, r.price_consent_status,
                   r.price_increase_status, r.offer_code_ref_name, r.promotional_offer_id, r.environment, r.raw_json
            FROM pending_renewal_info r JOIN ownership o ON o.original_transaction_id = r.original_transaction_id
            WHERE o.app_user_id = ? ORDER BY r.original_transaction_id
            """
        ).bind([appUserID])
        var renewalRecords: [RenewalRecord] = []
        while try renewals.step() {
            let s = renewals
            renewalRecords.append(
                RenewalRecord(
                    originalTransactionID: s.text(0)!, productID: s.text(1), autoRenewProductID: s.text(2),
                    autoRenewStatus: s.optionalInt(3).map { $0 == 1 }, expirationIntent: s.optionalInt(4),
                    gracePeriodExpiresDate: s.optionalInt(5), isInBillingRetryPeriod: s.optionalInt(6).map { $0 == 1 },
                    priceConsentStatus: s.text(7), priceIncreaseStatus: s.text(8), offerCodeRefName: s.text(9),
                    promotionalOfferID: s.text(10), environment: s.text(11)!, rawJSON: s.text(12)!))
        }
        return SubscriberRecord(appUserID: appUserID, transactions: records, renewals: renewalRecords)
    }

    /// Appends one row to the verification log.
    public func log(_ entry: VerificationLogEntry, at now: Int64) throws {
        try db.prepare(
            "INSERT INTO verifications (app_user_id, environment, apple_status, outcome, attempts, latency_ms, at) VALUES (?, ?, ?, ?, ?, ?, ?)"
        ).bind([entry.appUserID, entry.environment, entry.appleStatus, entry.outcome, entry.attempts, entry.latencyMs, now]).run()
    }

    // An unchanged row is not rewritten (the WHERE of the upsert), so re-posting changes nothing.
    static let upsertTransactionSQL = """
        INSERT INTO transactions (transaction_id, original_transaction_id, product_id, bundle_id, environment, purchase_date,
            original_purchase_date, expires_date, cancellation_date, cancellation_reason, quantity, is_trial_period,
            is_in_intro_offer_period, is_upgraded, ownership_type, subscription_group_id, web_order_line_item_id,
            promotional_offer_id, offer_code_ref_name, raw_json, first_seen_at, updated_at)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
        ON CONFLICT (transaction_id) DO UPDATE SET original_transaction_id = excluded.original_transaction_id,
            product_id = excluded.product_id, bundle_id = excluded.bundle_id, environment = excluded.environment,
            purchase_date = excluded.purchase_date, original_purchase_date = excluded.original_purchase_date,
            expires_date = excluded.expires_date, cancellation_date = excluded.cancellation_date,
            cancellation_reason = excluded.cancellation_reason, quantity = excluded.quantity,
            is_trial_period = excluded.is_trial_period, is_in_intro_offer_period = excluded.is_in_intro_offer_period,
            is_upgraded = excluded.is_upgraded, ownership_type = excluded.ownership_type,
            subscription_group_id = excluded.subscription_group_id, web_order_line_item_id = excluded.web_order_line_item_id,
            promotional_offer_id = excluded.promotional_offer_id, offer_code_ref_name = excluded.offer_code_ref_name,
            raw_json = excluded.raw_json, updated_at = excluded.updated_at
        WHERE raw_json IS NOT excluded.raw_json OR environment IS NOT excluded.environment OR bundle_id IS NOT excluded.bundle_id
        """

    static let upsertRenewalSQL = """
        INSERT INTO pending_renewal_info (original_transaction_id, product_id, auto_renew_product_id, auto_renew_status,
            expiration_intent, grace_period_expires_date, is_in_billing_retry_period, price_consent_status,
            price_increase_status, offer_code_ref_name, promotional_offer_id, environment, raw_json, updated_at)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
        ON CONFLICT (original_transaction_id) DO UPDATE SET product_id = excluded.product_id,
            auto_renew_product_id = excluded.auto_renew_product_id, auto_renew_status = excluded.auto_renew_status,
            expiration_intent = excluded.expiration_intent, grace_period_expires_date = excluded.grace_period_expires_date,
            is_in_billing_retry_period = excluded.is_in_billing_retry_period,
            price_consent_status = excluded.price_consent_status, price_increase_status = excluded.price_increase_status,
            offer_code_ref_name = excluded.offer_code_ref_name, promotional_offer_id = excluded.promotional_offer_id,
            environment = excluded.environment, raw_json = excluded.raw_json, updated_at = excluded.updated_at
        WHERE raw_json IS NOT excluded.raw_json OR environment IS NOT excluded.environment
        """
}

extension Statement {
    /// The column as an integer, nil when NULL.
    public func optionalInt(_ column: Int32) -> Int64? { isNull(column) ? nil : int(column) }
}
