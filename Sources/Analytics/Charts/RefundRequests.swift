import Entitlements
import Identifiers

/// One thing Apple said of a refund request about a transaction (a V2 notification), with
/// receiptd's answer on a request.
package struct RefundRequestEvent: Sendable, Equatable {
    package enum Kind: String, Sendable, CaseIterable {
        /// `CONSUMPTION_REQUEST`: the customer asked; Apple asks the app for consumption information.
        case requested
        /// `REFUND`.
        case granted
        /// `REFUND_DECLINED`.
        case declined
        /// `REFUND_REVERSED`: a refund granted is taken back.
        case reversed
    }

    package var transactionID: String
    package var kind: Kind
    /// Apple's signedDate.
    package var at: Int64
    /// A request's answer (Send Consumption Information): when it was sent, nil when it was not.
    package var answeredAt: Int64?
    /// `sent`, `consent_rescinded`, or why it failed; nil while none was tried.
    package var answer: String?
    /// A request's reason, as Apple states it (`consumptionRequestReason`: `UNINTENDED_PURCHASE`,
    /// `FULFILLMENT_ISSUE`, `UNSATISFIED_WITH_PURCHASE`, `LEGAL`, `OTHER`); nil when not stated.
    package var reason: String?

    package init(
        transactionID: String, kind: Kind, at: Int64, answeredAt: Int64? = nil, answer: String? = nil, reason: String? = nil
    ) {
        self.reason = reason
        self.transactionID = transactionID
        self.kind = kind
        self.at = at
        self.answeredAt = answeredAt
        self.answer = answer
    }
}

/// A refund request with what became of it.
struct RefundRequest {
    var at: Int64
    var answeredAt: Int64?
    var answer: String?
    var reason: String?
    /// Apple's decision: granted or declined, and when.
    var decision: Decision?
    /// When a refund granted was reversed.
    var reversedAt: Int64?

    struct Decision {
        var kind: RefundRequestEvent.Kind
        var at: Int64
    }

    /// How long Apple waits for the answer: 12 hours from its request.
    static let answerWindowMs: Int64 = 12 * 3_600_000

    /// The requests `events` (of one transaction) tell, oldest first, each with its decision:
    /// the first grant or decline after it and before the next request, and the reversal of a
    /// grant. A purchase refunded after a request that Apple's decision never reached (a lost
    /// `REFUND`) is granted at its refund.
    static func requests(_ events: [RefundRequestEvent], refundedAt: Int64?) -> [RefundRequest] {
        let ordered = events.sorted {
            ($0.at, RefundRequestEvent.Kind.allCases.firstIndex(of: $0.kind)!)
                < ($1.at, RefundRequestEvent.Kind.allCases.firstIndex(of: $1.kind)!)
        }
        var requests: [RefundRequest] = []
        for event in ordered {
            switch event.kind {
            case .requested:
                requests.append(
                    RefundRequest(at: event.at, answeredAt: event.answeredAt, answer: event.answer, reason: event.reason))
            case .granted, .declined:
                guard let last = requests.indices.last, requests[last].decision == nil else { continue }
                requests[last].decision = Decision(kind: event.kind, at: event.at)
            case .reversed:
                guard
                    let granted = requests.lastIndex(where: { $0.decision?.kind == .granted && $0.reversedAt == nil })
                else { continue }
                requests[granted].reversedAt = event.at
            }
        }
        if let refundedAt, let last = requests.indices.last, requests[last].decision == nil, refundedAt >= requests[last].at {
            requests[last].decision = Decision(kind: .granted, at: refundedAt)
        }
        return requests
    }
}

extension ChartDefinition {
    /// App Store refund requests: the requests Apple told of (`CONSUMPTION_REQUEST`) by the
    /// period they were made in, how many receiptd answered, and within Apple's 12 hours, and
    /// each one's resolution as of now: granted, declined, reversed, or none yet (the four add up
    /// to the requests).
    static let refundRequests = ChartDefinition(
        measures: [
            "requests", "answered", "answered_in_time", "answered_in_time_rate", "granted", "declined", "reversed",
            "no_resolution",
        ],
        parts: { $0 == "answered_in_time_rate" ? ["answered_in_time", "requests"] : nil }, ownDimensions: [.reason],
        followsSubscriptions: false,
        record: { $0.refundRequests() },
        close: {
            $0.zero(["requests", "answered", "answered_in_time", "granted", "declined", "reversed", "no_resolution"])
            $0.ratio("answered_in_time_rate", "answered_in_time", "requests")
        })
}

/// How a ledger becomes the refund_requests chart's items.
extension ItemRecorder {
    mutating func refundRequests() {
        guard !ledger.refundRequests.isEmpty else { return }
        let byTransaction = Dictionary(grouping: ledger.refundRequests) { Identifier($0.transactionID) }
        for e in admitted {
            guard let events = byTransaction[Identifier(e.purchase.transactionID)] else { continue }
            let refundedAt = e.purchase.isRefunded ? e.purchase.cancellationDate : nil
            for r in RefundRequest.requests(events, refundedAt: refundedAt) {
                // Split by reason: the request's items are in its reason's group.
                if groupBy == .reason { personGroup = r.reason ?? ChartDimension.unknown }
                defer { if groupBy == .reason { personGroup = nil } }
                flow("requests", at: r.at, 1, e, detail: r.answer ?? "unanswered")
                if let answered = r.answeredAt {
                    let delay = "answered after \((answered - r.at) / 60_000) minutes"
                    flow("answered", at: r.at, 1, e, detail: delay, valid: (answered, .max))
                    if answered - r.at <= RefundRequest.answerWindowMs {
                        flow("answered_in_time", at: r.at, 1, e, detail: delay, valid: (answered, .max))
                    }
                }
                // Undecided until Apple decides; then granted (until reversed, if it is) or declined.
                flow("no_resolution", at: r.at, 1, e, detail: "awaiting Apple's decision", valid: (.min, r.decision?.at ?? .max))
                if let decision = r.decision, decision.kind == .granted {
                    flow("granted", at: r.at, 1, e, detail: "granted", valid: (decision.at, r.reversedAt ?? .max))
                    if let reversed = r.reversedAt {
                        flow("reversed", at: r.at, 1, e, detail: "reversed", valid: (reversed, .max))
                    }
                } else if let decision = r.decision {
                    flow("declined", at: r.at, 1, e, detail: "declined", valid: (decision.at, .max))
                }
            }
        }
    }
}
