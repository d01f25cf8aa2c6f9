import Clocks
import CustomerOffers
import HTTPServer
import Identifiers
import JSON
import ReceiptCore

/// Apple's Retention Messaging: the answer to a customer about to cancel, and whether those shown each answer stayed.
struct RetentionRoutes: RouteGroup {
    let answerRetention: AnswerRetentionRequest
    let clock: WallClock

    func add(to api: inout API) {
        // Apple's Retention Messaging asks which message to show a customer who may cancel (no API
        // key: Apple cannot send one; the request proves itself with Apple's signature).
        api.on(.post, "/v1/retention-messages/apple", access: .anyone) { [answerRetention] request, _ in
            .json(try await answerRetention(request.body).body)
        }
        // Whether customers shown each retention answer stayed (`?since=`, the last 90 days by default).
        api.on(.get, "/v1/retention-messages/outcomes", access: .secretKey) { [answerRetention, clock] request, _ in
            let since = try Requests.since(request) ?? clock.now() - 90 * 86_400_000
            return Responses.retentionOutcomes(try await answerRetention.outcomes(since: since), since: since)
        }
    }
}

extension Requests {
    /// `?since=`: an RFC 3339 time or a date (YYYY-MM-DD); nil when absent.
    static func since(_ request: HTTPRequest) throws(ReceiptError) -> Int64? {
        guard let text = request.queryValue("since") else { return nil }
        guard let t = FieldRules.instant(text) else {
            throw .invalidRequest("`since` must be an RFC 3339 time or a date (YYYY-MM-DD).")
        }
        return t
    }
}

extension Responses {
    /// GET /v1/retention-messages/outcomes.
    static func retentionOutcomes(_ outcomes: [RetentionAnswerOutcome], since: Int64) -> HTTPResponse {
        .json(
            .object([
                "since": SubscriberDocument.time(since),
                "answers": .array(outcomes.map(retentionOutcome)),
            ]))
    }

    static func retentionOutcome(_ o: RetentionAnswerOutcome) -> JSONValue {
        var fields: [Identifier: JSONValue] = [
            "answered": .int(o.answered), "pending": .int(o.pending), "stayed": .int(o.stayed), "left": .int(o.left),
        ]
        fields["rule"] = o.rule.map(JSONValue.string) ?? .null
        fields["kind"] = o.kind.map(JSONValue.string) ?? .null
        fields["message_identifier"] = o.messageIdentifier.map(JSONValue.string) ?? .null
        return .object(fields)
    }
}
