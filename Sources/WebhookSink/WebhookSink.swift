package import Clocks
import Entitlements
package import HTTPServer
package import JSON
package import Logging
import Synchronization
package import Webhooks

/// The receiving end of receiptd's webhooks, for local development (`receiptd webhook-sink`) and
/// the tests: checks each request's `Receiptd-Signature` (and the Standard Webhooks headers, when
/// they come) against its secrets and the payload
/// against the schema in Docs/webhooks.md, records what arrived, and answers as told (acknowledge, fail, hang).
package final class WebhookSink: HTTPResponder, Sendable {
    /// What the sink answers.
    package enum Behaviour: Sendable, Equatable {
        /// 204 to a verified request (401 to one whose signature does not verify).
        case acknowledge
        /// This status, whatever came.
        case fail(status: Int)
        /// Answers 204 only after this long (to a request whether or not it verifies): a slow
        /// receiver, or, longer than the sender's timeout, no answer.
        case hang(Duration)
    }

    /// One request as it arrived.
    package struct Arrival: Sendable {
        /// `Receiptd-Webhook-Id`.
        package var webhookID: String?
        /// `Receiptd-Delivery-Attempt`.
        package var attempt: Int?
        package var signature: WebhookSignature.Verdict
        /// The Standard Webhooks headers' verdict when they came (`webhook-signature`), else nil.
        package var standardSignature: WebhookSignature.Verdict?
        /// What does not match the payload's schema; empty when it does.
        package var schemaProblems: [String]
        package var payload: JSONValue?
        package var body: [UInt8]
        /// The status answered (for `hang`, after the wait).
        package var answered: Int
        /// Whether the answer was a prompt 2xx: the sender saw it as delivered.
        package var acknowledged: Bool
        package var receivedAt: Int64

        package var appUserID: String? { payload?["app_user_id"]?.string }
        package var version: Int64? {
            payload?["version"].flatMap { if case .number(let n, _) = $0 { Int64(exactly: n) } else { nil } }
        }
        package var type: String? { payload?["type"]?.string }
    }

    private let secrets: [String]
    private let tolerance: Int64
    private let now: WallClock
    private let state = Mutex<(behaviour: Behaviour, arrivals: [Arrival])>((.acknowledge, []))
    /// Whether ``arrivals`` keeps each request (a long-running CLI sink only prints them).
    private let keepsArrivals: Bool
    /// Called with each arrival as it is recorded (the CLI prints it).
    private let onArrival: @Sendable (Arrival) -> Void

    /// `secrets`: the ones the sender signs with (either verifies); `tolerance`: seconds `t` may be
    /// off from `now`; `keepsArrivals`: false to hand each arrival to `onArrival` only.
    package init(
        secrets: [String], tolerance: Int64 = 300, now: WallClock = .system, keepsArrivals: Bool = true,
        onArrival: @escaping @Sendable (Arrival) -> Void = { _ in }
    ) {
        self.secrets = secrets
        self.tolerance = tolerance
        self.now = now
        self.keepsArrivals = keepsArrivals
        self.onArrival = onArrival
    }

    package var behaviour: Behaviour {
        get { state.withLock { $0.behaviour } }
        set { state.withLock { $0.behaviour = newValue } }
    }

    /// Everything that arrived, in order.
    package var arrivals: [Arrival] { state.withLock { $0.arrivals } }

    package func handler(for request: HTTPRequest) -> HTTPHandler {
        .task { [self] request, _ in await receive(request) }
    }

    func receive(_ request: HTTPRequest) async -> HTTPResponse {
        guard request.method == .post else { return HTTPResponse(status: .methodNotAllowed) }
        let receivedAt = now.now()
        let receiptd = WebhookSignature.verify(
            header: request.headers[first: "Receiptd-Signature"] ?? "", body: request.body, secrets: secrets,
            now: receivedAt / 1000, tolerance: tolerance)
        let standard = request.headers[first: "webhook-signature"].map { signature in
            StandardWebhooksSignature.verify(
                id: request.headers[first: "webhook-id"], timestamp: request.headers[first: "webhook-timestamp"],
                signature: signature, body: request.body, secrets: secrets, now: receivedAt / 1000, tolerance: tolerance)
        }
        // Both must verify when both came.
        let verdict = standard.map { $0 == .valid ? receiptd : $0 } ?? receiptd
        let payload = try? JSONValue.parse(request.body)
        let behaviour = self.behaviour
        var arrival = Arrival(
            webhookID: request.headers[first: "Receiptd-Webhook-Id"],
            attempt: request.headers[first: "Receiptd-Delivery-Attempt"].flatMap { Int($0) }, signature: verdict,
            standardSignature: standard,
            schemaProblems: payload.map(Self.schemaProblems) ?? ["the body is not JSON"], payload: payload, body: request.body,
            answered: 204, acknowledged: false, receivedAt: receivedAt)
        switch behaviour {
        case .acknowledge:
            arrival.answered = verdict == .valid ? 204 : 401
            arrival.acknowledged = verdict == .valid
        case .fail(let status): arrival.answered = status
        case .hang(let wait):
            record(arrival)
            try? await Task.sleep(for: wait)
            return HTTPResponse(status: HTTPStatus(code: 204))
        }
        record(arrival)
        return HTTPResponse(status: HTTPStatus(code: arrival.answered))
    }

    private func record(_ arrival: Arrival) {
        if keepsArrivals { state.withLock { $0.arrivals.append(arrival) } }
        onArrival(arrival)
    }

    /// How `payload` departs from Docs/webhooks.md: `{"id", "type", "created_at", "app_user_id",
    /// "event", "subscriber", "version"}`, the event as `/events` lists it, the subscriber document
    /// of the same user and version.
    package static func schemaProblems(_ payload: JSONValue) -> [String] {
        guard case .object(let members) = payload else { return ["the payload is not an object"] }
        var problems: [String] = []
        let expected: Set<String> = ["id", "type", "created_at", "app_user_id", "event", "subscriber", "version"]
        let keys = Set(members.keys.map { $0.description })
        if keys != expected { problems.append("members \(keys.sorted()) are not \(expected.sorted())") }
        if !(payload["id"]?.string?.hasPrefix("evt_") ?? false) { problems.append("id is not an evt_ string") }
        if !(payload["type"]?.string.map(WebhookEndpoint.eventTypes.contains) ?? false) { problems.append("type is unknown") }
        if payload["created_at"]?.string.flatMap({ CivilTime.instant(rfc3339: $0) }) == nil {
            problems.append("created_at is not RFC 3339")
        }
        guard case .number(let version, _)? = payload["version"], version >= 1, version == version.rounded() else {
            return problems + ["version is not a positive integer"]
        }
        let event = payload["event"]
        for key in ["id", "type", "at", "recorded_at"] where event?[key]?.string == nil {
            problems.append("event.\(key) is missing")
        }
        // A merge or a promotion is about no purchase: null there, a string everywhere else.
        let type = event?["type"]?.string ?? ""
        let aboutAPurchase = type != "merge" && !type.hasPrefix("promotional_")
        for key in ["product_id", "original_transaction_id"] where (event?[key]?.string != nil) != aboutAPurchase {
            problems.append(aboutAPurchase ? "event.\(key) is missing" : "event.\(key) is not null in a \(type)")
        }
        if case .array? = payload["subscriber"]?["aliases"] {} else { problems.append("subscriber.aliases is not an array") }
        if event?["type"]?.string != payload["type"]?.string { problems.append("event.type is not type") }
        let subscriber = payload["subscriber"]
        if subscriber?["app_user_id"]?.string != payload["app_user_id"]?.string || payload["app_user_id"]?.string == nil {
            problems.append("subscriber.app_user_id is not app_user_id")
        }
        if case .number(let v, _)? = subscriber?["version"], v == version {
        } else {
            problems.append("subscriber.version is not version")
        }
        for key in ["entitlements", "subscriptions", "non_subscriptions"] {
            if case .object? = subscriber?[key] {} else { problems.append("subscriber.\(key) is not an object") }
        }
        return problems
    }

    /// A sink being served, at ``url``.
    package struct Served: Sendable {
        package let server: HTTPServer
        package let port: Int
        package let sink: WebhookSink
        package var url: String { "http://127.0.0.1:\(port)/hooks" }

        package func stop() async {
            server.shutdown()
            await server.waitUntilStopped()
        }
    }

    /// Serves `sink` on `host`:`port` (port 0 picks a free one).
    package static func serve(_ sink: WebhookSink, host: String = "127.0.0.1", port: Int = 0, logger: Logger) throws -> Served {
        let server = HTTPServer(
            configuration: HTTPServerConfiguration(host: host, port: port, eventLoops: 1, accessLog: false), responder: sink,
            logger: logger)
        return Served(server: server, port: try server.start(), sink: sink)
    }
}
