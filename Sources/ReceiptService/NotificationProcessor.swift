import AppStore
import CoreMetrics
import Crypto
import FoundationEssentials
import HTTPServer
import JSON
import Logging
import SignedData
import Storage

/// POST /v1/notifications/apple (App Store Server Notifications V1 and V2) and GET
/// /v1/notifications. A notification is verified, stored once (deduplicated), applied to its
/// subscriber like any verified receipt, and only then acknowledged with 200.
struct NotificationProcessor: Sendable {
    let verifier: SignedDataVerifier
    let database: DatabaseQueue
    let bundleIDs: [String]
    /// V1's proof of origin; nil: V1 notifications are refused.
    let sharedSecret: String?
    let state: SubscriberState
    let policy: OwnershipPolicy
    let logger: Logger
    let now: @Sendable () -> Int64
    var metrics: any MetricsFactory = NOOPMetricsHandler.instance

    /// A verified notification, ready to store.
    struct Incoming: Sendable {
        var row: NotificationRecord
        /// The purchase facts it carries (empty for TEST, SUMMARY and the like).
        var facts: VerifiedReceiptRecord
        /// StoreKit's appAccountToken, to find the user when nobody holds the purchase yet.
        var accountToken: String?
    }

    /// How a delivery ended; the 200 body says it.
    struct Outcome: Sendable, Equatable {
        var id: Int64
        var outcome: String
        var duplicate: Bool
        var appUserID: String?
    }

    func receive(_ request: HTTPRequest, requestID: String) async -> HTTPResponse {
        do {
            let incoming = try await verify(request.body)
            let result = try await store(incoming)
            count(
                version: String(incoming.row.version), type: incoming.row.type,
                outcome: result.duplicate ? "duplicate" : result.outcome)
            logger.info(
                "notification",
                metadata: [
                    "request_id": "\(requestID)", "version": "\(incoming.row.version)", "type": "\(incoming.row.type)",
                    "subtype": "\(incoming.row.subtype ?? "")", "outcome": "\(result.outcome)",
                    "duplicate": "\(result.duplicate)",
                ])
            let body: JSONValue = .object([
                "status": .string("ok"), "notification_id": .string(String(result.id)), "outcome": .string(result.outcome),
                "duplicate": .bool(result.duplicate),
            ])
            return HTTPResponse(status: .ok, headers: ["Content-Type": "application/json"], body: body.jsonBytes)
        } catch let error as APIError {
            count(version: "unknown", type: "unknown", outcome: "refused_\(error.code)")
            logger.warning(
                "notification refused",
                metadata: ["request_id": "\(requestID)", "code": "\(error.code)", "status": "\(error.status.code)"])
            return error.response(requestID: requestID)
        } catch {
            // The database failed: 503, so Apple delivers again (§3.1: 5xx means retry).
            count(version: "unknown", type: "unknown", outcome: "not_stored")
            logger.error("notification not stored", metadata: ["request_id": "\(requestID)", "error": "\(error)"])
            return APIError.temporarilyUnavailable.response(requestID: requestID)
        }
    }

    /// `notifications_total{version, type, outcome}`: `type` only from verified notifications (a
    /// refused one is `unknown`), so what a stranger posts cannot add series.
    private func count(version: String, type: String, outcome: String) {
        Counter(
            label: "notifications_total", dimensions: [("version", version), ("type", type), ("outcome", outcome)],
            factory: metrics
        ).increment()
    }

    /// V2 (`{"signedPayload"}`) or V1 (`notification_type`), told apart by shape; verified, mapped.
    func verify(_ body: [UInt8]) async throws(APIError) -> Incoming {
        guard let json = try? JSONValue.parse(body), case .object(let fields) = json else {
            throw .invalidRequest("The body must be a JSON object.")
        }
        let received = now()
        if case .string(let jws)? = fields["signedPayload"] {
            let n: SignedNotification
            do {
                n = try await verifier.notification(jws)
            } catch {
                throw .signedData(error)
            }
            let row = NotificationRecord(
                dedupeKey: n.notificationUUID, version: 2, type: n.notificationType, subtype: n.subtype,
                environment: n.environment.flatMap(AppStoreEnvironment.init(appleName:))?.rawValue, bundleID: n.bundleID,
                originalTransactionID: n.transaction?.originalTransactionID ?? n.renewal?.originalTransactionID,
                transactionID: n.transaction?.transactionID, appleStatus: n.status, outcome: "received", signedAt: n.signedDate,
                receivedAt: received, body: String(decoding: body, as: UTF8.self))
            let facts = RecordMapping.record(transaction: n.transaction, renewal: n.renewal, statedAt: n.signedDate)
            return Incoming(row: row, facts: facts, accountToken: n.transaction?.appAccountToken ?? n.renewal?.appAccountToken)
        }
        guard fields["notification_type"]?.string != nil else {
            throw .invalidRequest("Neither a V2 notification (signedPayload) nor a V1 one (notification_type).")
        }
        // The password first: nothing else of a V1 body is read for a stranger. Constant time:
        // SHA-256 digests compare in constant time, whatever the lengths.
        guard let secret = sharedSecret, let password = fields["password"]?.string,
            SHA256.hash(data: Array(password.utf8)) == SHA256.hash(data: Array(secret.utf8))
        else { throw .wrongNotificationPassword }
        let parsed: NotificationV1?
        do {
            parsed = try NotificationV1(json)
        } catch {
            throw .invalidRequest("The notification's \(error).")
        }
        guard let n = parsed else { throw .invalidRequest("A V1 notification needs `notification_type`.") }
        guard let bundle = n.bundleID, bundleIDs.contains(bundle) else {
            throw .wrongApp("`bid` \(n.bundleID ?? "(absent)") is not a configured app.")
        }
        guard let unified = n.unifiedReceipt, unified.status == .valid else {
            throw .invalidRequest("`unified_receipt` is missing or its status is not 0.")
        }
        let environment = unified.environment ?? n.environment ?? .production
        var facts = RecordMapping.record(of: unified, environment: environment, bundleID: bundle)
        // Auto-renew switched on or off: Apple dates the switch (§2.2), so the history does too.
        if n.notificationType == "DID_CHANGE_RENEWAL_STATUS" { facts.renewalChangedAt = n.autoRenewStatusChangeDateMs }
        let redacted = n.redacted.jsonBytes
        let newest = facts.transactions.max {
            ($0.purchaseDate ?? 0, $0.transactionID) < ($1.purchaseDate ?? 0, $1.transactionID)
        }
        let row = NotificationRecord(
            dedupeKey: "v1:" + SHA256.hash(data: redacted).map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined(),
            version: 1,
            type: n.notificationType, environment: environment.rawValue, bundleID: bundle,
            originalTransactionID: n.originalTransactionID ?? newest?.originalTransactionID, transactionID: newest?.transactionID,
            outcome: "received", receivedAt: received, body: String(decoding: redacted, as: UTF8.self))
        return Incoming(row: row, facts: facts, accountToken: nil)
    }

    /// One durable write transaction: the delivery (once), its facts under their holder (or
    /// waiting for one), the holder's version and events.
    func store(_ incoming: Incoming) async throws -> Outcome {
        try await database.run { [policy, state] db in
            try db.durableTransaction { () throws -> Outcome in
                let notifications = NotificationStore(db)
                guard let id = try notifications.insert(incoming.row) else {
                    let stored = try notifications.find(dedupeKey: incoming.row.dedupeKey)
                    return Outcome(
                        id: stored?.id ?? 0, outcome: stored?.outcome ?? "unknown", duplicate: true, appUserID: stored?.appUserID)
                }
                let facts = incoming.facts
                guard !facts.transactions.isEmpty || !facts.renewals.isEmpty else {
                    try notifications.finish(id, outcome: "recorded", appUserID: nil)
                    return Outcome(id: id, outcome: "recorded", duplicate: false, appUserID: nil)
                }
                let store = ReceiptStore(db)
                var holder: String?
                for original in [incoming.row.originalTransactionID].compactMap({ $0 }) + facts.originals where holder == nil {
                    holder = try store.owner(of: original)
                }
                if holder == nil, let token = incoming.accountToken { holder = try store.subscriber(forAccountToken: token) }
                guard let user = holder else {
                    _ = try store.saveUnowned(facts, now: incoming.row.receivedAt)
                    try notifications.finish(id, outcome: "pending_owner", appUserID: nil)
                    return Outcome(id: id, outcome: "pending_owner", duplicate: false, appUserID: nil)
                }
                switch try state.save(facts, for: user, policy: policy, in: db, now: incoming.row.receivedAt) {
                case .document(_, _, let changes):
                    let outcome = changes > 0 ? "applied" : "unchanged"
                    try notifications.finish(id, outcome: outcome, appUserID: user)
                    return Outcome(id: id, outcome: outcome, duplicate: false, appUserID: user)
                case .inUse:
                    // Under `keep`, the purchases are split between users: keep the facts, attach to nobody.
                    _ = try store.saveUnowned(facts, now: incoming.row.receivedAt)
                    try notifications.finish(id, outcome: "owner_conflict", appUserID: nil)
                    return Outcome(id: id, outcome: "owner_conflict", duplicate: false, appUserID: nil)
                }
            }
        }
    }

    /// GET /v1/notifications: the newest deliveries first, `limit` (1–200, default 50) at a time,
    /// older ones from `next_cursor`.
    func list(_ request: HTTPRequest, requestID: String) async -> HTTPResponse {
        do {
            let limit = try ReceiptProcessor.limit(request)
            var before: Int64?
            if let text = request.queryValue("cursor") {
                guard let id = Int64(text), id > 0 else { throw APIError.invalidRequest("`cursor` must be a `next_cursor`.") }
                before = id
            }
            let rows = try await database.run { [before] db in
                try NotificationStore(db).latest(limit: limit + 1, before: before)
            }
            let page = rows.prefix(limit)
            let body: JSONValue = .object([
                "notifications": .array(page.map(Self.json)),
                "next_cursor": rows.count > limit ? page.last.map { .string(String($0.id)) } ?? .null : .null,
            ])
            return HTTPResponse(status: .ok, headers: ["Content-Type": "application/json"], body: body.jsonBytes)
        } catch let error as APIError {
            return error.response(requestID: requestID)
        } catch {
            logger.error("GET /v1/notifications failed", metadata: ["request_id": "\(requestID)", "error": "\(error)"])
            return APIError.serverFault.response(requestID: requestID)
        }
    }

    static func json(_ n: NotificationRecord) -> JSONValue {
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
