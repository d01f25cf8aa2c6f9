import AppStore
import CustomerOffers
import Entitlements
import HTTPServer
import JSON
import Notifications
import Operations
import ReceiptCore
import Storage
import StoreCalls
import Webhooks

/// Use-case results as the API's JSON bodies.
enum Responses {
    /// The subscriber document with its `ETag` (`W/"<version>"`, `W/"<version>-explained"`), or 304
    /// when `If-None-Match` names it. `explain` adds the explanations.
    static func document(_ snapshot: SubscriberSnapshot, explain: Bool, request: HTTPRequest) -> HTTPResponse {
        if let proof = snapshot.proven, case let named = snapshot.document.identifiers, !named.isSubset(of: proof),
            case let visible = snapshot.document.visible(provenBy: proof), !named.isSubset(of: visible)
        {
            // An app's answer naming purchases it did not prove it holds: those ids are null, and
            // "(hidden)" where an explanation's words quote one. Docs/security.md.
            let tag = "W/\"\(snapshot.version)\(explain ? "-explained" : "")-partial\""
            if let unchanged = notModified(tag, request) { return unchanged }
            let shown = PurchaseIdentifiers.redacted(
                snapshot.document.rendered(version: snapshot.version, now: snapshot.now, explain: explain), keeping: visible)
            return HTTPResponse(
                status: .ok, headers: ["Content-Type": "application/json", "ETag": tag], body: shown.jsonBytes)
        }
        let tag = entityTag(version: snapshot.version, explain: explain)
        if let unchanged = notModified(tag, request) { return unchanged }
        return HTTPResponse(
            status: .ok, headers: ["Content-Type": "application/json", "ETag": tag],
            body: explain
                ? snapshot.document.rendered(version: snapshot.version, now: snapshot.now, explain: true).jsonBytes
                : snapshot.document.body(version: snapshot.version, now: snapshot.now))
    }

    /// A cached document (never explained), byte for byte what ``document(_:explain:request:)`` gives.
    static func cached(_ entry: SubscriberCache.Entry, now: Int64, request: HTTPRequest) -> HTTPResponse {
        let tag = entityTag(version: entry.version, explain: false)
        if let unchanged = notModified(tag, request) { return unchanged }
        return HTTPResponse(
            status: .ok, headers: ["Content-Type": "application/json", "ETag": tag], body: entry.body(now: now))
    }

    /// A document's weak ETag: its version, and whether it carries explanations.
    static func entityTag(version: Int64, explain: Bool) -> String { "W/\"\(version)\(explain ? "-explained" : "")\"" }

    /// 304 when `If-None-Match` names `tag`.
    static func notModified(_ tag: String, _ request: HTTPRequest) -> HTTPResponse? {
        let wanted = request.headers[all: "If-None-Match"]
        guard !wanted.isEmpty, EntityTag.weakMatch(tag, anyOf: wanted.joined(separator: ",")) else { return nil }
        return HTTPResponse(status: .notModified, headers: ["ETag": tag])
    }

    /// The last known document while Apple is down, marked `"stale": true` with its age
    /// (`stale_seconds` since `verified_at`, Apple's last word on the user).
    static func stale(_ lastKnown: ReceiptError.LastKnown, explain: Bool) -> JSONValue {
        let snapshot = lastKnown.snapshot
        var document = snapshot.document.rendered(version: snapshot.version, now: snapshot.now, explain: explain)
        if let proof = snapshot.proven {
            document = PurchaseIdentifiers.redacted(document, keeping: PurchaseIdentifiers.widened(proof, in: document))
        }
        guard case .object(var fields) = document else { return .null }
        fields["stale"] = .bool(true)
        fields["verified_at"] = SubscriberDocument.time(lastKnown.verifiedAt)
        let age = lastKnown.verifiedAt.map { max(0, snapshot.now - $0) / 1000 }
        fields["stale_seconds"] = age.map { .int($0) } ?? .null
        return .object(fields)
    }

    /// GET /v1/subscribers/{id}/events.
    static func events(_ page: ReadSubscriber.EventPage, of appUserID: String) -> HTTPResponse {
        .json(
            .object([
                "app_user_id": .string(appUserID), "events": .array(page.events.map(\.json)),
                "next_cursor": page.next.map { .string("\($0.at).\($0.id)") } ?? .null,
            ]))
    }

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

    /// An offer's signature, as StoreKit takes it, with why it was allowed.
    static func offerSigned(_ s: SignOffer.Signed) -> HTTPResponse {
        var members: [Identifier: JSONValue] = [
            "format": .string(s.format.rawValue), "key_id": .string(s.keyID), "nonce": .string(s.nonce),
            "timestamp": .int(s.timestamp), "signature": .string(s.signature),
            "explanation": SubscriberDocument.json(s.explanation),
        ]
        members["allowed"] = .bool(s.allowed)
        return .json(.object(members))
    }

    /// POST /v1/app-transactions: what was kept (never the other ids of a shared Apple Account).
    static func appTransaction(_ r: RecordAppTransaction.Recorded) -> HTTPResponse {
        .json(
            .object([
                "app_user_id": .string(r.record.appUserID), "app_transaction_id": .string(r.record.appTransactionID),
                "environment": .string(r.record.environment),
                "original_application_version": r.record.originalApplicationVersion.map(JSONValue.string) ?? .null,
                "original_purchase_date": SubscriberDocument.time(r.record.originalPurchaseDate),
                "original_platform": r.record.originalPlatform.map(JSONValue.string) ?? .null,
            ]))
    }

    /// GET /v1/subscribers/{id}/offers.
    static func offers(_ o: SignOffer.Overview, retention: [RetentionAnswerRecord]) -> HTTPResponse {
        func decision(_ e: Explanation) -> JSONValue { SubscriberDocument.json(e) }
        return .json(
            .object([
                "promotional": .array(
                    o.promotional.map {
                        .object([
                            "offer_id": .string($0.offerID), "product_id": .string($0.productID),
                            "eligible": .bool($0.decision.rule == "offer_eligible"), "explanation": decision($0.decision),
                        ])
                    }),
                "introductory": .array(
                    o.introductory.map {
                        .object([
                            "subscription_group": .string($0.group), "product_id": .string($0.productID),
                            "eligible": .bool($0.decision.rule == "introductory_offer_eligible"),
                            "explanation": decision($0.decision),
                        ])
                    }),
                "given": .array(
                    o.given.map { r in
                        .object([
                            "id": .string(String(r.id)), "kind": .string(r.kind), "product_id": .string(r.productID),
                            "offer_id": r.offerID.map(JSONValue.string) ?? .null, "format": .string(r.format),
                            "key_id": .string(r.keyID), "allowed": .bool(r.allowed), "requested_by": .string(r.requestedBy),
                            "issued_at": SubscriberDocument.time(r.issuedAt),
                        ])
                    }),
                "retention_answers": .array(retention.map(retentionAnswer)),
            ]))
    }

    static func retentionAnswer(_ a: RetentionAnswerRecord) -> JSONValue {
        func text(_ s: String?) -> JSONValue { s.map(JSONValue.string) ?? .null }
        var o: [Identifier: JSONValue] = [
            "request_identifier": .string(a.requestIdentifier), "original_transaction_id": .string(a.originalTransactionID),
            "product_id": .string(a.productID), "decision": .string(a.decision), "user_locale": .string(a.userLocale),
            "environment": .string(a.environment), "answered_at": SubscriberDocument.time(a.answeredAt),
        ]
        o["rule"] = text(a.rule)
        o["kind"] = text(a.kind)
        o["message_identifier"] = text(a.messageIdentifier)
        o["offer_id"] = text(a.offerID)
        o["period_end"] = a.periodEnd.map(SubscriberDocument.time) ?? .null
        return .object(o)
    }

    /// GET /v1/retention-messages/outcomes.
    static func retentionOutcomes(_ outcomes: [RetentionOutcome], since: Int64) -> HTTPResponse {
        .json(
            .object([
                "since": SubscriberDocument.time(since),
                "answers": .array(outcomes.map(retentionOutcome)),
            ]))
    }

    static func retentionOutcome(_ o: RetentionOutcome) -> JSONValue {
        var fields: [Identifier: JSONValue] = [
            "answered": .int(o.answered), "pending": .int(o.pending), "stayed": .int(o.stayed), "left": .int(o.left),
        ]
        fields["rule"] = o.rule.map(JSONValue.string) ?? .null
        fields["kind"] = o.kind.map(JSONValue.string) ?? .null
        fields["message_identifier"] = o.messageIdentifier.map(JSONValue.string) ?? .null
        return .object(fields)
    }

    /// GET /v1/notifications.
    static func notifications(_ page: Listings.Page<NotificationRecord, Int64>) -> HTTPResponse {
        .json(
            .object([
                "notifications": .array(page.rows.map(notification)),
                "next_cursor": page.next.map { .string(String($0)) } ?? .null,
            ]))
    }

    static func notification(_ n: NotificationRecord) -> JSONValue {
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

    /// GET /v1/admin/shared-receipts.
    static func sharedReceipts(_ page: Listings.Page<SharedReceipt, Listings.SharedCursor>, moreThan: Int) -> HTTPResponse {
        .json(
            .object([
                "more_than": .int(moreThan), "shared_receipts": .array(page.rows.map(sharedReceipt)),
                "next_cursor": page.next.map { .string("\($0.users).\($0.original)") } ?? .null,
            ]))
    }

    static func sharedReceipt(_ s: SharedReceipt) -> JSONValue {
        let text = { (s: String?) in s.map(JSONValue.string) ?? .null }
        return .object([
            "original_transaction_id": .string(s.originalTransactionID),
            "product_id": text(s.transfers.last?.productID), "users": .int(s.users),
            "holder": text(s.holder),
            "transfers": .array(
                s.transfers.map { t in
                    .object(["from": text(t.from), "to": .string(t.to), "at": SubscriberDocument.time(t.at)])
                }),
        ])
    }

    /// GET /v1/admin/shared-app-accounts.
    static func sharedAppAccounts(_ page: Listings.Page<SharedAppAccount, Listings.SharedCursor>, moreThan: Int)
        -> HTTPResponse
    {
        .json(
            .object([
                "more_than": .int(moreThan),
                "shared_app_accounts": .array(
                    page.rows.map { a in
                        .object([
                            "app_transaction_id": .string(a.appTransactionID), "users": .int(a.users),
                            "app_user_ids": .array(a.appUserIDs.map(JSONValue.string)),
                        ])
                    }),
                "next_cursor": page.next.map { .string("\($0.users).\($0.original)") } ?? .null,
            ]))
    }

    /// GET /v1/admin/shadow-diffs.
    static func shadowDiffs(_ page: Listings.Page<ShadowDiffRecord, Int64>) -> HTTPResponse {
        .json(
            .object([
                "shadow_diffs": .array(
                    page.rows.map { d in
                        .object([
                            "id": .string(String(d.id)), "app_user_id": .string(d.appUserID),
                            "transaction_id": .string(d.transactionID),
                            "environment": d.environment.map(JSONValue.string) ?? .null, "at": SubscriberDocument.time(d.at),
                            "differences": (try? JSONValue.parse(Array(d.differences.utf8))) ?? .array([]),
                        ])
                    }),
                "next_cursor": page.next.map { .string(String($0)) } ?? .null,
            ]))
    }

    /// GET /v1/admin/webhooks/deliveries.
    static func deliveries(_ page: Listings.Page<WebhookDelivery, Int64>) -> HTTPResponse {
        .json(
            .object([
                "deliveries": .array(page.rows.map(delivery)), "next_cursor": page.next.map { .string(String($0)) } ?? .null,
            ]))
    }

    static func delivery(_ d: WebhookDelivery) -> JSONValue {
        .object([
            "id": .string(String(d.id)), "webhook_id": .string(d.messageID), "endpoint": .string(d.endpoint),
            "app_user_id": .string(d.appUserID), "type": .string(d.type), "version": .int(d.version),
            "status": .string(d.status.rawValue), "in_flight": .bool(d.claimed && d.status == .pending),
            "attempts": .int(d.attempts), "next_attempt_at": d.status == .pending ? SubscriberDocument.time(d.dueAt) : .null,
            "last_attempt_at": SubscriberDocument.time(d.lastAttemptAt), "last_status": d.lastStatus.map { .int($0) } ?? .null,
            "last_error": d.lastError.map(JSONValue.string) ?? .null, "created_at": SubscriberDocument.time(d.createdAt),
            "finished_at": SubscriberDocument.time(d.finishedAt),
        ])
    }

    /// POST /v1/admin/webhooks/{endpoint}/replay's 202.
    static func replayed(endpoint: String, queued: Int) -> HTTPResponse {
        .json(.object(["endpoint": .string(endpoint), "queued": .int(queued)]), status: .accepted)
    }

    /// GET /v1/admin/orders/{order_id}.
    static func order(_ order: AppStoreSupport.Order) -> HTTPResponse {
        let text = { (s: String?) in s.map(JSONValue.string) ?? .null }
        return .json(
            .object([
                "order_id": .string(order.orderID), "environment": .string(order.environment.rawValue),
                "transactions": .array(
                    order.transactions.map { t, holder in
                        .object([
                            "transaction_id": .string(t.transactionID),
                            "original_transaction_id": .string(t.originalTransactionID), "product_id": .string(t.productID),
                            "bundle_id": .string(t.bundleID), "type": text(t.type),
                            "purchased_at": SubscriberDocument.time(t.purchaseDate),
                            "expires_at": SubscriberDocument.time(t.expiresDate),
                            "revoked_at": SubscriberDocument.time(t.revocationDate), "app_user_id": text(holder),
                        ])
                    }),
            ]))
    }

    /// POST /v1/subscribers/{id}/extend.
    /// DELETE /v1/subscribers/{id}: that it happened and how many rows it took, per table.
    static func erased(_ appUserID: String, _ outcome: ErasureOutcome) -> HTTPResponse { .json(outcome.json(appUserID)) }

    /// The answer to POST /v1/subscribers/{id}/aliases: whether the ids were merged now (false: they
    /// already were one), the purchases that moved, and the subscriber's document.
    static func aliased(_ outcome: AddAlias.Outcome) -> HTTPResponse {
        .json(
            .object([
                "merged": .bool(outcome.merged), "moved": .array(outcome.moved.map(JSONValue.string)),
                "subscriber": outcome.snapshot.document.rendered(
                    version: outcome.snapshot.version, now: outcome.snapshot.now, explain: false),
            ]))
    }

    static func extended(_ e: AppStoreSupport.Extended) -> HTTPResponse {
        .json(
            .object([
                "extension": .object([
                    "original_transaction_id": .string(e.originalTransactionID),
                    "effective_date": SubscriberDocument.time(e.effectiveDate),
                ]),
                "subscriber": e.snapshot.document.rendered(version: e.snapshot.version, now: e.snapshot.now, explain: false),
            ]))
    }

    /// A mass extension as stored: what was asked, by whom, and how far it has come.
    static func massExtension(_ r: MassExtensionRecord) -> JSONValue {
        let int = { (n: Int64?) in n.map(JSONValue.int) ?? .null }
        return .object([
            "request_id": .string(r.requestID), "bundle_id": .string(r.bundleID), "environment": .string(r.environment),
            "product_id": .string(r.productID), "storefronts": .array(r.storefronts.map(JSONValue.string)),
            "days": .int(Int64(r.days)), "reason": .string(r.reason), "requested_by": .string(r.requestedBy),
            "requested_at": SubscriberDocument.time(r.requestedAt), "status": .string(r.status.rawValue),
            "submitted_at": SubscriberDocument.time(r.submittedAt),
            "apple_completed_at": SubscriberDocument.time(r.appleCompletedAt), "succeeded_count": int(r.succeededCount),
            "failed_count": int(r.failedCount), "subscriptions_refreshed": .int(Int64(r.refreshed)),
            "finished_at": SubscriberDocument.time(r.finishedAt),
            "next_step_at": SubscriberDocument.time(r.dueAt), "attempts": .int(Int64(r.attempts)),
            "last_error": r.lastError.map(JSONValue.string) ?? .null,
        ])
    }

    /// GET /v1/admin/mass-extensions.
    static func massExtensions(_ rows: [MassExtensionRecord], more: Bool) -> HTTPResponse {
        .json(
            .object([
                "mass_extensions": .array(rows.map(massExtension)),
                "next_cursor": more ? rows.last.map { .string("\($0.requestedAt).\($0.requestID)") } ?? .null : .null,
            ]))
    }

    /// POST /v1/admin/test-notification.
    static func testNotification(token: String, environment: AppStoreEnvironment) -> HTTPResponse {
        .json(
            .object(["test_notification_token": .string(token), "environment": .string(environment.rawValue)]),
            status: .accepted)
    }
}

/// The console's and support's answers: promotions, statistics, a purchase's holder.
extension Responses {
    /// A promotion as granted or revoked.
    static func promotion(_ p: Promotion) -> JSONValue {
        let text = { (s: String?) in s.map(JSONValue.string) ?? .null }
        return .object([
            "id": .string(String(p.id)), "entitlement": .string(p.entitlement),
            "starts_at": SubscriberDocument.time(p.startsAt), "expires_at": SubscriberDocument.time(p.expiresAt),
            "granted_by": .string(p.grantedBy), "reason": .string(p.reason),
            "revoked_at": SubscriberDocument.time(p.revokedAt), "revoked_by": text(p.revokedBy),
            "revoke_reason": text(p.revokeReason),
        ])
    }

    /// The answer to POST and DELETE …/entitlements/{name}/promotional: the promotions it made or
    /// ended, and the subscriber's explained document.
    static func promoted(_ snapshot: SubscriberSnapshot, _ promotions: [Promotion], status: HTTPStatus) -> HTTPResponse {
        .json(
            .object([
                "promotions": .array(promotions.map(promotion)),
                "subscriber": snapshot.document.rendered(version: snapshot.version, now: snapshot.now, explain: true),
            ]), status: status)
    }

    /// GET /v1/admin/transactions/{id}: the purchase and who holds it.
    static func holding(_ h: Listings.Holding) -> HTTPResponse {
        .json(
            .object([
                "original_transaction_id": .string(h.originalTransactionID),
                "product_id": h.productID.map(JSONValue.string) ?? .null,
                "app_user_id": h.appUserID.map(JSONValue.string) ?? .null,
            ]))
    }

    /// POST /v1/subscribers/{id}/refresh: what Apple said about each purchase, and the document after.
    static func refreshed(_ outcomes: [(original: String, outcome: String)], _ snapshot: SubscriberSnapshot) -> HTTPResponse {
        .json(
            .object([
                "purchases": .array(
                    outcomes.map { .object(["original_transaction_id": .string($0.original), "outcome": .string($0.outcome)]) }),
                "subscriber": snapshot.document.rendered(version: snapshot.version, now: snapshot.now, explain: true),
            ]))
    }

    /// GET /v1/admin/stats.
    static func stats(
        _ r: Statistics.Report, appStore: Routes.AppStoreStatus?, webhooks: [WebhookOperations.EndpointStatus]?
    ) -> HTTPResponse {
        let time = SubscriberDocument.time
        var types = Statistics.eventTypes
        for bucket in r.buckets {
            for type in bucket.counts.keys.sorted() where !types.contains(type) { types.append(type) }
        }
        var members: [Identifier: JSONValue] = [
            "from": time(r.from), "to": time(r.to), "interval": .string(r.interval.rawValue),
            "generated_at": time(r.generatedAt), "event_types": .array(types.map(JSONValue.string)),
            "buckets": .array(
                r.buckets.map { b in
                    .object([
                        "start": time(b.start),
                        "counts": .object(strings: Dictionary(uniqueKeysWithValues: types.map { ($0, .int(b.counts[$0] ?? 0)) })),
                    ])
                }),
            "subscribers": .object([
                "total": .int(r.subscribers), "stale": .int(r.stale),
                "products": .array(
                    r.products.map {
                        .object([
                            "kind": .string($0.entry.kind), "product_id": .string($0.entry.productID),
                            "state": .string($0.entry.state), "subscribers": .int($0.subscribers),
                        ])
                    }),
            ]),
            "notifications": .array(
                r.notifications.map {
                    .object(["type": .string($0.type), "outcome": .string($0.outcome), "count": .int($0.count)])
                }),
            "apple": .object([
                "verifications": .array(
                    r.verifications.map { .object(["outcome": .string($0.outcome), "count": .int($0.count)]) }),
                "circuit": appStore?.json ?? .null,
            ]),
        ]
        let backlog = r.playBacklog
        members["google_play"] = .object([
            "notifications": .array(
                r.playNotifications.map {
                    .object(["type": .string($0.type), "outcome": .string($0.outcome), "count": .int($0.count)])
                }),
            "unacknowledged": .int(backlog.unacknowledged), "retrying": .int(backlog.retrying),
            "unconsumed": .int(backlog.unconsumed),
            "oldest_unacknowledged_seconds": backlog.oldestUnacknowledgedSince.map { .int(max(0, r.generatedAt - $0) / 1_000) }
                ?? .null,
        ])
        members["webhooks"] = .array(
            (webhooks ?? []).map {
                .object([
                    "endpoint": .string($0.name), "pending": .int($0.pending),
                    "oldest_pending_seconds": .int(Int($0.oldestPendingSeconds)),
                ])
            })
        return .json(.object(members))
    }
}
