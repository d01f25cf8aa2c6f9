package import DatabaseEngine

/// One answer receiptd gave Apple's Retention Messaging real-time request (`retention_answers`).
package struct RetentionAnswerRecord: Sendable, Equatable {
    package var requestIdentifier: String
    package var appUserID: String?
    package var originalTransactionID: String
    package var productID: String
    package var environment: String
    package var userLocale: String
    package var rule: String?
    /// `message`, `alternate_product`, `promotional_offer`; nil when no rule held.
    package var kind: String?
    package var messageIdentifier: String?
    package var offerID: String?
    /// The explanation's rule id.
    package var decision: String
    package var periodEnd: Int64?
    /// The body answered.
    package var responseJSON: String
    package var answeredAt: Int64

    package init(
        requestIdentifier: String, appUserID: String?, originalTransactionID: String, productID: String, environment: String,
        userLocale: String, rule: String?, kind: String?, messageIdentifier: String?, offerID: String?, decision: String,
        periodEnd: Int64?, responseJSON: String, answeredAt: Int64
    ) {
        self.responseJSON = responseJSON
        self.requestIdentifier = requestIdentifier
        self.appUserID = appUserID
        self.originalTransactionID = originalTransactionID
        self.productID = productID
        self.environment = environment
        self.userLocale = userLocale
        self.rule = rule
        self.kind = kind
        self.messageIdentifier = messageIdentifier
        self.offerID = offerID
        self.decision = decision
        self.periodEnd = periodEnd
        self.answeredAt = answeredAt
    }
}

/// How the customers shown one answer did: answered, still in the period then current
/// (`pending`), renewed past it (`stayed`), or not (`left`).
package struct RetentionOutcome: Sendable, Equatable {
    package var rule: String?
    package var kind: String?
    package var messageIdentifier: String?
    package var answered: Int64
    package var pending: Int64
    package var stayed: Int64
    package var left: Int64
}

/// Retention Messaging answers (Migrations/0027_retention_answers.sql).
package struct RetentionStore {
    let db: Database

    package init(_ db: Database) { self.db = db }

    /// Records an answer; Apple's retry of a request already answered records nothing. Whether it was new.
    @discardableResult
    package func record(_ r: RetentionAnswerRecord) throws -> Bool {
        try db.cached(
            """
            INSERT INTO retention_answers (request_identifier, app_user_id, original_transaction_id, product_id, environment,
                user_locale, rule, kind, message_identifier, offer_id, decision, period_end, response_json, answered_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (request_identifier) DO NOTHING
            """
        ).bind([
            r.requestIdentifier, r.appUserID, r.originalTransactionID, r.productID, r.environment, r.userLocale, r.rule, r.kind,
            r.messageIdentifier, r.offerID, r.decision, r.periodEnd, r.responseJSON, r.answeredAt,
        ]).run()
        return db.changes > 0
    }

    /// The body answered to `requestIdentifier` before, if Apple asked it already.
    package func response(to requestIdentifier: String) throws -> String? {
        try db.cached("SELECT response_json FROM retention_answers WHERE request_identifier = ?").bind([requestIdentifier])
            .firstText()
    }

    /// A person's answers (under `ids`, or about the purchases they hold), newest first.
    package func answers(of ids: [String], originals: [String], limit: Int) throws -> [RetentionAnswerRecord] {
        guard !ids.isEmpty || !originals.isEmpty else { return [] }
        let (a, b) = (Self.marks(ids.count), Self.marks(originals.count))
        let q = try db.prepare(
            """
            SELECT request_identifier, app_user_id, original_transaction_id, product_id, environment, user_locale, rule, kind,
                message_identifier, offer_id, decision, period_end, response_json, answered_at
            FROM retention_answers WHERE app_user_id IN (\(a)) OR original_transaction_id IN (\(b))
            ORDER BY answered_at DESC, request_identifier LIMIT ?
            """
        ).bind(ids.map { $0 } + originals.map { $0 } + [Int64(limit)])
        var out: [RetentionAnswerRecord] = []
        while try q.step() {
            out.append(
                RetentionAnswerRecord(
                    requestIdentifier: q.text(0)!, appUserID: q.text(1), originalTransactionID: q.text(2)!, productID: q.text(3)!,
                    environment: q.text(4)!, userLocale: q.text(5)!, rule: q.text(6), kind: q.text(7),
                    messageIdentifier: q.text(8), offerID: q.text(9), decision: q.text(10)!, periodEnd: q.optionalInt(11),
                    responseJSON: q.text(12)!, answeredAt: q.int(13)))
        }
        return out
    }

    /// Per rule and message, the answers given since `since`, and whether those customers stayed:
    /// a period of the same purchase, not refunded, ending after the one current when Apple asked.
    package func outcomes(since: Int64, now: Int64) throws -> [RetentionOutcome] {
        let q = try db.prepare(
            """
            SELECT a.rule, a.kind, a.message_identifier, count(*),
                sum(CASE WHEN a.period_end IS NULL OR a.period_end > ? THEN 1 ELSE 0 END),
                sum(CASE WHEN a.period_end <= ? AND EXISTS (
                    SELECT 1 FROM transactions t WHERE t.original_transaction_id = a.original_transaction_id
                        AND t.expires_date > a.period_end AND t.cancellation_date IS NULL) THEN 1 ELSE 0 END)
            FROM retention_answers a WHERE a.answered_at >= ?
            GROUP BY a.rule, a.kind, a.message_identifier ORDER BY count(*) DESC, a.rule, a.message_identifier
            """
        ).bind([now, now, since])
        var out: [RetentionOutcome] = []
        while try q.step() {
            let (answered, pending, stayed) = (q.int(3), q.int(4), q.int(5))
            out.append(
                RetentionOutcome(
                    rule: q.text(0), kind: q.text(1), messageIdentifier: q.text(2), answered: answered, pending: pending,
                    stayed: stayed, left: answered - pending - stayed))
        }
        return out
    }

    static func marks(_ n: Int) -> String {
        n == 0 ? "NULL" : Array(repeating: "?", count: n).joined(separator: ", ")
    }
}
