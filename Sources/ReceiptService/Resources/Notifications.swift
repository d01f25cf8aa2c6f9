import AppStore
import CoreMetrics
import Entitlements
import HTTPServer
import JSON
import Logging
import Notifications
import ReceiptCore

/// The stores' notifications (Apple's V1 and V2, Google's Pub/Sub pushes) and the list of those received.
struct NotificationRoutes: RouteGroup {
    let ingestPlayNotification: IngestPlayNotification
    let ingestNotification: IngestNotification
    let listings: Listings
    let telemetry: Telemetry
    let logger: Logger

    func add(to api: inout API) {
        // Apple's App Store Server Notifications, V1 or V2 (no API key: Apple cannot send one; V1
        // proves itself with the shared secret, V2 with Apple's signature).
        let notifications = NotificationTelemetry(logger: logger, metrics: telemetry.factory)
        api.on(.post, "/v1/notifications/apple", access: .anyone) { [ingestNotification] request, context in
            do {
                let outcome = try await ingestNotification(request.body)
                notifications.received(outcome, requestID: context.requestID)
                return Responses.received(outcome)
            } catch {
                notifications.refused(error, requestID: context.requestID)
                throw error
            }
        }
        // Google Play's real-time developer notifications, as Cloud Pub/Sub pushes them (no API key:
        // the push proves itself with its OIDC token, checked by the use case).
        api.on(.post, "/v1/notifications/google", access: .anyone) { [ingestPlayNotification] request, _ in
            do throws(ReceiptError) {
                let outcome = try await ingestPlayNotification(
                    authorization: request.headers[first: "Authorization"], body: request.body)
                return Responses.receivedPush(outcome)
            } catch {
                throw APIError(error)
            }
        }
        // The latest notifications with their outcome, by type, outcome and subscriber.
        api.on(.get, "/v1/notifications", access: .secretKey) { [listings] request, _ in
            let (limit, before) = (try Requests.limit(request), try Requests.idCursor(request))
            let filter = try Requests.notificationFilter(request)
            return Responses.notifications(try await listings.notifications(limit: limit, before: before, filter: filter))
        }
    }
}

/// `notifications_total{version, type, outcome}` and a log line per delivery: `type` only from
/// verified notifications (a refused one is `unknown`), so what a stranger posts cannot add series.
struct NotificationTelemetry: Sendable {
    let logger: Logger
    let metrics: any MetricsFactory

    func received(_ o: IngestNotification.Outcome, requestID: String) {
        count(version: String(o.version), type: o.type, outcome: o.duplicate ? "duplicate" : o.outcome.rawValue)
        logger.info(
            "notification",
            metadata: [
                "request_id": "\(requestID)", "version": "\(o.version)", "type": "\(o.type)", "subtype": "\(o.subtype ?? "")",
                "outcome": "\(o.outcome.rawValue)", "duplicate": "\(o.duplicate)",
            ])
    }

    func refused(_ error: any Error, requestID: String) {
        if case ReceiptError.notStored? = error as? ReceiptError {
            count(version: "unknown", type: "unknown", outcome: "not_stored")
            return
        }
        let refusal = API.apiError(error)
        count(version: "unknown", type: "unknown", outcome: "refused_\(refusal.code)")
        logger.warning(
            "notification refused",
            metadata: ["request_id": "\(requestID)", "code": "\(refusal.code)", "status": "\(refusal.status.code)"])
    }

    private func count(version: String, type: String, outcome: String) {
        Counter(
            label: "notifications_total", dimensions: [("version", version), ("type", type), ("outcome", outcome)],
            factory: metrics
        ).increment()
    }
}

extension Requests {
    /// GET /v1/notifications' filters: `?type=`, `?outcome=`, `?app_user_id=`.
    static func notificationFilter(_ request: HTTPRequest) throws(ReceiptError) -> Listings.NotificationFilter {
        func word(_ name: String) throws(ReceiptError) -> String? {
            guard let text = request.queryValue(name) else { return nil }
            let allowed = { (b: UInt8) in
                b == UInt8(ascii: "_") || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(b)
                    || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(b) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(b)
            }
            guard (1...64).contains(text.utf8.count), text.utf8.allSatisfy(allowed) else {
                throw .invalidRequest("`\(name)` must be 1 to 64 letters, digits or `_`.")
            }
            return text
        }
        return Listings.NotificationFilter(
            type: try word("type"), outcome: try word("outcome"),
            appUserID: try request.queryValue("app_user_id").map { id throws(ReceiptError) in try FieldRules.appUserID(id) })
    }
}

extension Responses {
    /// POST /v1/notifications/apple's 200.
    static func received(_ outcome: IngestNotification.Outcome) -> HTTPResponse {
        .json(
            .object([
                "status": .string("ok"), "notification_id": .string(String(outcome.id)),
                "outcome": .string(outcome.outcome.rawValue),
                "duplicate": .bool(outcome.duplicate),
            ]))
    }

    /// POST /v1/notifications/google: a 200 is Pub/Sub's acknowledgement of the message.
    static func receivedPush(_ outcome: IngestPlayNotification.Outcome) -> HTTPResponse {
        .json(.object(["status": .string("ok"), "outcome": .string(outcome.outcome.rawValue)]))
    }

    /// GET /v1/notifications.
    static func notifications(_ page: Listings.Page<Listings.Notification, Int64>) -> HTTPResponse {
        .json(
            .object([
                "notifications": .array(page.rows.map(notification)),
                "next_cursor": page.next.map { .string(String($0)) } ?? .null,
            ]))
    }

    static func notification(_ n: Listings.Notification) -> JSONValue {
        let text = { (s: String?) in s.map(JSONValue.string) ?? .null }
        let status = SignedNotification.statusName(n.appleStatus)
        return .object([
            "id": .string(String(n.id)), "version": .int(n.version),
            "type": .string(n.type), "subtype": text(n.subtype), "outcome": .string(n.outcome),
            "environment": text(n.environment), "bundle_id": text(n.bundleID),
            "original_transaction_id": text(n.originalTransactionID), "transaction_id": text(n.transactionID),
            "app_user_id": text(n.appUserID), "apple_status": text(status),
            "signed_at": SubscriberDocument.time(n.signedAt), "received_at": SubscriberDocument.time(n.receivedAt),
        ])
    }
}
