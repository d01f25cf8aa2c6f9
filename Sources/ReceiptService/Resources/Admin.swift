import AppStore
import Entitlements
import HTTPServer
import Identifiers
import JSON
import Operations
import ReceiptCore
import RevenueCatProtocol

/// The operators' overview and lists: statistics, who holds a transaction, purchases and Apple Accounts shared between app users, shadow mode's findings.
struct AdminRoutes: RouteGroup {
    let listings: Listings
    /// What the apps sell (`offerings.file`), as the SDK listener serves it.
    let offerings: Offerings
    let webhooks: WebhookOperations
    let statistics: Statistics
    let appStore: VerifyReceiptClient

    func add(to api: inout API) {
        // Support and product: the offerings each store's apps are served (Config/offerings.json).
        let offered = JSONValue.object([
            "current": offerings.current.map(JSONValue.string) ?? .null,
            "app_store": offerings.json(for: .appStore)["offerings"] ?? .array([]),
            "play_store": offerings.json(for: .playStore)["offerings"] ?? .array([]),
        ]).jsonBytes
        api.immediate(.get, "/v1/admin/offerings", access: .secretKey) { _, _ in .json(bytes: offered) }
        // Support: who holds the purchase a transaction id (any of its renewals) belongs to.
        api.on(.get, "/v1/admin/transactions/{transaction_id}", access: .secretKey) { [listings] _, context in
            Responses.holding(try await listings.holding(try Requests.transactionID(in: context)))
        }
        // The overview: subscribers by product and state now; events, notifications and Apple per bucket.
        api.on(.get, "/v1/admin/stats", access: .secretKey) { [statistics, appStore, webhooks] request, _ in
            let range = try Requests.statsRange(request)
            let report = try await statistics(from: range.from, to: range.to, interval: range.interval)
            return Responses.stats(
                report, appStore: OperationsRoutes.appStoreStatus(appStore), webhooks: try? await webhooks.status())
        }
        // Purchases passed between app users, with their transfers.
        api.on(.get, "/v1/admin/shared-receipts", access: .secretKey) { [listings] request, _ in
            let limit = try Requests.limit(request)
            let moreThan = try Requests.moreThan(request)
            let after = try Requests.sharedCursor(request)
            return Responses.sharedReceipts(
                try await listings.sharedReceipts(moreThan: moreThan, limit: limit, after: after), moreThan: moreThan)
        }
        // Apple Accounts whose AppTransaction was posted under several app user ids.
        api.on(.get, "/v1/admin/shared-app-accounts", access: .secretKey) { [listings] request, _ in
            let limit = try Requests.limit(request)
            let moreThan = try Requests.moreThan(request)
            let after = try Requests.sharedCursor(request)
            return Responses.sharedAppAccounts(
                try await listings.sharedAppAccounts(moreThan: moreThan, limit: limit, after: after), moreThan: moreThan)
        }
        // Shadow mode's findings: receipts whose verifyReceipt and Server API answers differ.
        api.on(.get, "/v1/admin/shadow-diffs", access: .secretKey) { [listings] request, _ in
            let (limit, before) = (try Requests.limit(request), try Requests.idCursor(request))
            return Responses.shadowDiffs(try await listings.shadowDiffs(limit: limit, before: before))
        }
    }
}

extension Requests {
    /// Shared receipts' `?more_than=` from 1 to 10000; 1 when absent.
    static func moreThan(_ request: HTTPRequest) throws(ReceiptError) -> Int {
        guard let text = request.queryValue("more_than") else { return 1 }
        guard let n = Int(text), (1...10_000).contains(n) else {
            throw .invalidRequest("`more_than` must be an integer from 1 to 10000.")
        }
        return n
    }

    /// Shared receipts' `?cursor=<users>.<original_transaction_id>` from `next_cursor`.
    static func sharedCursor(_ request: HTTPRequest) throws(ReceiptError) -> Listings.SharedCursor? {
        guard let text = request.queryValue("cursor") else { return nil }
        guard let dot = text.firstIndex(of: "."), let users = Int(text[..<dot]), users > 0,
            !text[text.index(after: dot)...].isEmpty
        else { throw .invalidRequest("`cursor` must be a `next_cursor` from an earlier page.") }
        return .init(users: users, original: String(text[text.index(after: dot)...]))
    }

    /// GET /v1/admin/stats: `?from=` and `?to=` (RFC 3339 times or dates; the last 30 days to now
    /// when absent) and `?interval=` (`hour`, `day` or `week`; `day` when absent).
    static func statsRange(_ request: HTTPRequest) throws(ReceiptError) -> (
        from: Int64?, to: Int64?, interval: Statistics.Interval
    ) {
        func instant(_ name: String) throws(ReceiptError) -> Int64? {
            guard let text = request.queryValue(name) else { return nil }
            guard let t = FieldRules.instant(text) else {
                throw .invalidRequest("`\(name)` must be an RFC 3339 time or a date (YYYY-MM-DD).")
            }
            return t
        }
        let interval = try request.queryValue("interval").map { text throws(ReceiptError) in
            guard let i = Statistics.Interval(rawValue: text) else {
                throw .invalidRequest("`interval` must be hour, day or week.")
            }
            return i
        }
        return (try instant("from"), try instant("to"), interval ?? .day)
    }

    /// The `{transaction_id}` path parameter: any transaction of a purchase, or its original.
    static func transactionID(in context: RouteContext) throws(ReceiptError) -> String {
        let id = context.parameters["transaction_id"] ?? ""
        try FieldRules.storedTransactionID(id)
        return id
    }
}

extension Responses {
    /// GET /v1/admin/shared-receipts.
    static func sharedReceipts(_ page: Listings.Page<Listings.SharedPurchase, Listings.SharedCursor>, moreThan: Int)
        -> HTTPResponse
    {
        .json(
            .object([
                "more_than": .int(moreThan), "shared_receipts": .array(page.rows.map(sharedReceipt)),
                "next_cursor": page.next.map { .string("\($0.users).\($0.original)") } ?? .null,
            ]))
    }

    static func sharedReceipt(_ s: Listings.SharedPurchase) -> JSONValue {
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
    static func sharedAppAccounts(_ page: Listings.Page<Listings.SharedAccount, Listings.SharedCursor>, moreThan: Int)
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
    static func shadowDiffs(_ page: Listings.Page<Listings.ShadowDiff, Int64>) -> HTTPResponse {
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

    /// GET /v1/admin/transactions/{id}: the purchase and who holds it.
    static func holding(_ h: Listings.Holding) -> HTTPResponse {
        .json(
            .object([
                "original_transaction_id": .string(h.originalTransactionID),
                "product_id": h.productID.map(JSONValue.string) ?? .null,
                "app_user_id": h.appUserID.map(JSONValue.string) ?? .null,
            ]))
    }

    /// GET /v1/admin/stats.
    static func stats(
        _ r: Statistics.Report, appStore: OperationsRoutes.AppStoreStatus?, webhooks: [WebhookOperations.EndpointStatus]?
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
                            "kind": .string($0.kind), "product_id": .string($0.productID), "state": .string($0.state),
                            "subscribers": .int($0.subscribers),
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
