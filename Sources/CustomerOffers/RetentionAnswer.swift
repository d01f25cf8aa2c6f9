import Storage

/// One answer receiptd gave Apple's Retention Messaging, as support sees it
/// (``AnswerRetentionRequest/answers(of:limit:)``).
package struct RetentionAnswer: Sendable, Equatable {
    package var requestIdentifier: String
    package var originalTransactionID: String
    package var productID: String
    package var environment: String
    package var userLocale: String
    /// The rule that held, and what it answered (`message`, `alternate_product`,
    /// `promotional_offer`); nil when none held.
    package var rule: String?
    package var kind: String?
    package var messageIdentifier: String?
    package var offerID: String?
    /// The explanation's rule id.
    package var decision: String
    package var periodEnd: Int64?
    package var answeredAt: Int64
}

/// How the customers shown one answer did (``AnswerRetentionRequest/outcomes(since:)``):
/// answered, still in the period then current (`pending`), renewed past it (`stayed`), or not (`left`).
package struct RetentionAnswerOutcome: Sendable, Equatable {
    package var rule: String?
    package var kind: String?
    package var messageIdentifier: String?
    package var answered: Int64
    package var pending: Int64
    package var stayed: Int64
    package var left: Int64
}

extension RetentionAnswer {
    init(_ r: RetentionAnswerRecord) {
        self.init(
            requestIdentifier: r.requestIdentifier, originalTransactionID: r.originalTransactionID, productID: r.productID,
            environment: r.environment, userLocale: r.userLocale, rule: r.rule, kind: r.kind,
            messageIdentifier: r.messageIdentifier, offerID: r.offerID, decision: r.decision, periodEnd: r.periodEnd,
            answeredAt: r.answeredAt)
    }
}

extension RetentionAnswerOutcome {
    init(_ o: RetentionOutcome) {
        self.init(
            rule: o.rule, kind: o.kind, messageIdentifier: o.messageIdentifier, answered: o.answered, pending: o.pending,
            stayed: o.stayed, left: o.left)
    }
}
