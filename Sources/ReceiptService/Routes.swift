import AppStore
import Charts
import Clocks
import CoreMetrics
import CustomerOffers
import HTTPServer
import JSON
import Logging
import Notifications
import Operations
import ReceiptCore
import Resilience
import StoreCalls

/// The HTTP surface of receiptd: each route declares who may call it, reads its request into a
/// use case's input, calls the use case and writes its result. Errors become responses in one
/// place (``API``).
struct Routes: Sendable {
    let checkReadiness: CheckReadiness
    let auth: APIAuth
    /// POST /v1/receipts's table of stores: a body's purchase read by its store's reader.
    let purchases: PurchaseReaders
    let ingestPlayNotification: IngestPlayNotification
    let signOffer: SignOffer
    let answerRetention: AnswerRetentionRequest
    let recordAppTransaction: RecordAppTransaction
    let readSubscriber: ReadSubscriber
    let eraseSubscriber: EraseSubscriber
    let addAlias: AddAlias
    let exportSubscriber: ExportSubscriber
    let ingestNotification: IngestNotification
    let listings: Listings
    let support: AppStoreSupport
    let massExtensions: MassExtensions
    let webhooks: WebhookOperations
    let promote: PromoteSubscriber
    let statistics: Statistics
    let charts: ReadChart
    let customerMoney: ReadCustomerMoney
    let refresher: Refresher
    /// The web console's files (``Console``).
    let console: Console
    /// For the circuit breaker's state in `/readyz`.
    let appStore: VerifyReceiptClient
    /// Per-key and per-address limits on POST /v1/receipts.
    let limiter: RateLimiter
    let telemetry: Telemetry
    let documentCache: SubscriberCache
    let metricsRequireKey: Bool
    /// `openapi.yaml`, served as is.
    let openAPI: [UInt8]?
    let logger: Logger
    let clock: WallClock

    func router() -> Router {
        var api = API(auth: auth, logger: logger)
        // Liveness: the process answers. Never touches the database.
        api.immediate(.get, "/healthz", access: .anyone) { _, _ in
            .json(.object(["status": .string("ok")]))
        }
        // Readiness: the database answers and every known migration is applied.
        api.on(.get, "/readyz", access: .anyone) { [checkReadiness, appStore, webhooks] _, _ in
            Self.readiness(
                await checkReadiness(), appStore: Self.appStoreStatus(appStore), webhooks: try? await webhooks.status())
        }
        // Prometheus text: every family in Docs/operations.md "Metrics" (a secret key unless `metrics.requireKey` is false).
        api.immediate(.get, "/metrics", access: metricsRequireKey ? .secretKey : .anyone) {
            [appStore, telemetry, documentCache] _, _ in
            HTTPResponse(
                status: .ok, headers: ["Content-Type": "text/plain; version=0.0.4; charset=utf-8"],
                body: telemetry.scrape(breaker: appStore.breaker?.state, cachedDocuments: documentCache.count))
        }
        // The API's contract (OpenAPI 3.1), for integrators and the CI's schemathesis run.
        api.immediate(.get, "/openapi.yaml", access: .anyone) { [openAPI] _, _ in
            guard let openAPI else {
                throw APIError(status: .notFound, code: "not_found", message: "This receiptd has no OpenAPI document.")
            }
            return HTTPResponse(status: .ok, headers: ["Content-Type": "application/yaml"], body: openAPI)
        }
        // A mobile app posts its receipt or signed transaction: verify, store, answer the document.
        api.on(.post, "/v1/receipts", access: .publicKey) {
            [purchases, limiter, clock, auth] request, context in
            let key = APIAuth.bearerKey(request).map { String(decoding: $0, as: UTF8.self) } ?? ""
            if let wait = limiter.check(key: key, address: context.request.remoteAddress, now: clock.now()) {
                throw APIError.rateLimited(retryAfterSeconds: wait)
            }
            let verification = try purchases.read(request.body)
            let explain = try Requests.explain(request)
            do throws(ReceiptError) {
                let snapshot = try await verification(auth.caller(request))
                return Responses.document(snapshot, explain: explain, request: request)
            } catch {
                throw APIError(error, explain: explain)
            }
        }
        // A backend reads a subscriber, without calling Apple: from the document cache on the
        // event loop when it is current, else from storage.
        api.on(
            .get, "/v1/subscribers/{app_user_id}", access: .secretKey,
            immediately: { [readSubscriber] request, context in
                let user = try Requests.appUserID(in: context)
                guard try !Requests.explain(request), let (entry, now) = readSubscriber.cached(user) else { return nil }
                return Responses.cached(entry, now: now, request: request)
            },
            handler: { [readSubscriber] request, context in
                let user = try Requests.appUserID(in: context)
                let explain = try Requests.explain(request)
                return Responses.document(try await readSubscriber.document(user), explain: explain, request: request)
            })
        // Erasure on a person's request (GDPR art. 17): every row under the id, the bytes scrubbed.
        api.on(.delete, "/v1/subscribers/{app_user_id}", access: .secretKey) { [eraseSubscriber] request, context in
            let user = try Requests.appUserID(in: context)
            return Responses.erased(user, try await eraseSubscriber(user, by: APIAuth.fingerprint(request)))
        }
        // The app learnt who an anonymous user is, or two accounts are one person: one subscriber.
        api.on(.post, "/v1/subscribers/{app_user_id}/aliases", access: .secretKey) { [addAlias] request, context in
            let user = try Requests.appUserID(in: context)
            return Responses.aliased(try await addAlias(user, alias: try Requests.alias(request.body)))
        }
        // Everything stored about a person (GDPR art. 15), streamed a page of rows at a time.
        api.on(.get, "/v1/subscribers/{app_user_id}/export", access: .secretKey) { [exportSubscriber] _, context in
            let parts = try await exportSubscriber(try Requests.appUserID(in: context))
            return HTTPResponse(
                status: .ok, headers: ["Content-Type": "application/json", "Cache-Control": "no-store"],
                stream: HTTPBodyStream(next: parts.next))
        }
        // A backend reads a subscriber's lifecycle events, newest first.
        api.on(.get, "/v1/subscribers/{app_user_id}/events", access: .secretKey) { [readSubscriber] request, context in
            let user = try Requests.appUserID(in: context)
            let (limit, cursor) = (try Requests.limit(request), try Requests.eventCursor(request))
            return Responses.events(try await readSubscriber.events(user, limit: limit, before: cursor), of: user)
        }
        // What a customer paid, each transaction's refund, tax, commission and proceeds (estimated).
        api.on(.get, "/v1/subscribers/{app_user_id}/money", access: .secretKey) { [customerMoney] request, context in
            let environment = try Requests.environment(request)
            let (user, money) = try await customerMoney(try Requests.appUserID(in: context), environment: environment)
            return Responses.customerMoney(user, environment: environment, money)
        }
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
        // An app asks, before showing an offer, for the signature StoreKit needs: given only when
        // the rules allow the customer the offer (Docs/offers.md).
        api.on(.post, "/v1/subscribers/{app_user_id}/offers/signatures", access: .publicKey) {
            [signOffer, auth] request, context in
            let input = try Requests.offerSignature(request.body, user: try Requests.appUserID(in: context))
            return Responses.offerSigned(
                try await signOffer.promotional(input, requestedBy: APIAuth.fingerprint(request), caller: auth.caller(request)))
        }
        api.on(.post, "/v1/subscribers/{app_user_id}/offers/introductory-eligibility", access: .publicKey) {
            [signOffer, auth] request, context in
            let user = try Requests.appUserID(in: context)
            let asked = try Requests.introductoryEligibility(request.body)
            return Responses.offerSigned(
                try await signOffer.introductory(
                    appUserID: user, productID: asked.productID, transactionID: asked.transactionID, bundleID: asked.bundleID,
                    requestedBy: APIAuth.fingerprint(request), caller: auth.caller(request)))
        }
        // An app posts StoreKit's AppTransaction for its user: verified and kept (Docs/offers.md).
        api.on(.post, "/v1/app-transactions", access: .publicKey) { [recordAppTransaction] request, _ in
            let (user, jws) = try Requests.appTransaction(request.body)
            return Responses.appTransaction(try await recordAppTransaction(appUserID: user, signedAppTransaction: jws))
        }
        // Support has receiptd ask Apple for a customer's AppTransaction (Get App Transaction Info),
        // when their app never posted it.
        api.on(.post, "/v1/subscribers/{app_user_id}/app-transaction", access: .secretKey) {
            [recordAppTransaction] _, context in
            Responses.appTransaction(try await recordAppTransaction.fetch(appUserID: try Requests.appUserID(in: context)))
        }
        // Support sees a customer's offers: what they may have now and why, what they were given,
        // and what Apple was answered when they looked at cancelling.
        api.on(.get, "/v1/subscribers/{app_user_id}/offers", access: .secretKey) {
            [signOffer, answerRetention] _, context in
            let user = try Requests.appUserID(in: context)
            return Responses.offers(try await signOffer.overview(user), retention: try await answerRetention.answers(of: user))
        }
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
        // Support gives an entitlement for a while (after an outage, a complaint), or takes it back.
        api.on(.post, "/v1/subscribers/{app_user_id}/entitlements/{name}/promotional", access: .secretKey) {
            [promote] request, context in
            let (user, name) = (try Requests.appUserID(in: context), try Requests.entitlementName(in: context))
            let (term, reason) = try Requests.promotion(request.body)
            let granted = try await promote.grant(name, to: user, for: term, reason: reason, by: APIAuth.fingerprint(request))
            return Responses.promoted(granted.snapshot, [granted.promotion], status: .created)
        }
        api.on(.delete, "/v1/subscribers/{app_user_id}/entitlements/{name}/promotional", access: .secretKey) {
            [promote] request, context in
            let (user, name) = (try Requests.appUserID(in: context), try Requests.entitlementName(in: context))
            let reason = try Requests.revocationReason(request.body)
            let revoked = try await promote.revoke(name, of: user, reason: reason, by: APIAuth.fingerprint(request))
            return Responses.promoted(revoked.snapshot, revoked.revoked, status: .ok)
        }
        // Support: ask Apple again now about every purchase of a subscriber.
        api.on(.post, "/v1/subscribers/{app_user_id}/refresh", access: .secretKey) { [refresher, readSubscriber] _, context in
            let user = try Requests.appUserID(in: context)
            let outcomes = try await refresher.refreshNow(user)
            return Responses.refreshed(outcomes, try await readSubscriber.document(user))
        }
        // Support: who holds the purchase a transaction id (any of its renewals) belongs to.
        api.on(.get, "/v1/admin/transactions/{transaction_id}", access: .secretKey) { [listings] _, context in
            Responses.holding(try await listings.holding(try Requests.transactionID(in: context)))
        }
        // The overview: subscribers by product and state now; events, notifications and Apple per bucket.
        api.on(.get, "/v1/admin/stats", access: .secretKey) { [statistics, appStore, webhooks] request, _ in
            let range = try Requests.statsRange(request)
            let report = try await statistics(from: range.from, to: range.to, interval: range.interval)
            return Responses.stats(report, appStore: Self.appStoreStatus(appStore), webhooks: try? await webhooks.status())
        }
        // The subscription metrics (Docs/analytics.md), as JSON or CSV, and what makes each figure.
        api.on(.get, "/v1/admin/charts/{chart}", access: .secretKey) { [charts] request, context in
            let input = try Requests.chart(request, context)
            return Responses.chart(try await charts(input), csv: try Requests.wantsCSV(request))
        }
        api.on(.get, "/v1/admin/charts/{chart}/drill", access: .secretKey) { [charts] request, context in
            let input = try Requests.chart(request, context)
            let (period, measure) = try Requests.drill(request)
            let page = try Requests.drillPage(request)
            return Responses.drill(
                try await charts.drill(input, period: period, measure: measure, page: page), input: input, csv: page.everything)
        }
        // The web console: its page and files, no key (they hold no data; the page asks for one).
        for path in console.paths {
            api.immediate(.get, path, access: .anyone) { [console] request, _ in console.response(path, request: request) }
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
        // Support: a purchase by the order id on the customer's Apple invoice, and who holds it.
        api.on(.get, "/v1/admin/orders/{order_id}", access: .secretKey) { [support] _, context in
            let orderID = try Requests.orderID(in: context)
            return Responses.order(try await support.order(orderID))
        }
        // Support: extend a subscriber's subscription at Apple, then store its new expiry.
        api.on(.post, "/v1/subscribers/{app_user_id}/extend", access: .secretKey) { [support] request, context in
            let user = try Requests.appUserID(in: context)
            let extension_ = try Requests.extensionRequest(request.body, appUserID: user)
            return Responses.extended(try await support.extend(extension_))
        }
        // Support: extend every active subscription to a product at Apple (an outage's compensation).
        api.on(.post, "/v1/admin/mass-extensions", access: .secretKey) { [massExtensions] request, _ in
            let asked = try Requests.massExtension(request.body)
            let (record, created) = try await massExtensions.request(asked, by: APIAuth.fingerprint(request))
            return .json(Responses.massExtension(record), status: created ? .accepted : .ok)
        }
        api.on(.get, "/v1/admin/mass-extensions", access: .secretKey) { [massExtensions] request, _ in
            let limit = try Requests.limit(request)
            let before = try Requests.massExtensionCursor(request)
            let found = try await massExtensions.list(limit: limit + 1, before: before)
            return Responses.massExtensions(Array(found.prefix(limit)), more: found.count > limit)
        }
        api.on(.get, "/v1/admin/mass-extensions/{request_id}", access: .secretKey) { [massExtensions] _, context in
            .json(Responses.massExtension(try await massExtensions.find(try Requests.requestID(in: context))))
        }
        // Ops: webhook deliveries, newest first, by status, endpoint and subscriber.
        api.on(.get, "/v1/admin/webhooks/deliveries", access: .secretKey) { [webhooks] request, _ in
            let (limit, before) = (try Requests.limit(request), try Requests.idCursor(request))
            let (status, endpoint, user) = try Requests.deliveryFilters(request)
            return Responses.deliveries(
                try await webhooks.deliveries(status: status, endpoint: endpoint, appUserID: user, limit: limit, before: before))
        }
        // Ops: send one delivery again now (a failed one, or one waiting for its retry).
        api.on(.post, "/v1/admin/webhooks/deliveries/{id}/retry", access: .secretKey) { [webhooks] _, context in
            .json(Responses.delivery(try await webhooks.retry(try Requests.deliveryID(in: context))), status: .accepted)
        }
        // Ops: send an endpoint every stored event again from a time (a consumer that lost its data).
        api.on(.post, "/v1/admin/webhooks/{endpoint}/replay", access: .secretKey) { [webhooks] request, context in
            let endpoint = try Requests.endpointName(in: context)
            let since = try Requests.replaySince(request.body)
            return Responses.replayed(endpoint: endpoint, queued: try await webhooks.replay(endpoint, since: since))
        }
        // Ops: ask Apple to send a TEST notification to the configured URL.
        api.on(.post, "/v1/admin/test-notification", access: .secretKey) { [support] request, _ in
            let (bundleID, environment) = try Requests.testNotification(request.body)
            let sent = try await support.testNotification(bundleID: bundleID, environment: environment)
            return Responses.testNotification(token: sent.token, environment: sent.environment)
        }
        var router = api.router
        router.metrics = telemetry.http
        return router
    }

    /// The body of `/readyz`.
    struct Readiness: Sendable, Equatable {
        var status: String
        var database: String
        var migrationsApplied: Int
        var migrationsPending: Int
        /// The App Store circuit breaker: informative only (GETs are served whatever Apple does).
        var appStore: AppStoreStatus? = nil
        /// Each webhook endpoint's backlog: informative only (the API is served whatever receivers do).
        var webhooks: [WebhookOperations.EndpointStatus]? = nil

        var json: JSONValue {
            var members: [Identifier: JSONValue] = [
                "status": .string(status), "database": .string(database),
                "migrations_applied": .int(migrationsApplied), "migrations_pending": .int(migrationsPending),
            ]
            if let appStore { members["app_store"] = appStore.json }
            if let webhooks, !webhooks.isEmpty {
                var endpoints: [Identifier: JSONValue] = [:]
                for e in webhooks {
                    endpoints[Identifier(e.name)] = .object([
                        "pending": .int(e.pending), "oldest_pending_seconds": .int(Int(e.oldestPendingSeconds)),
                    ])
                }
                members["webhooks"] = .object(endpoints)
            }
            return .object(members)
        }
    }

    struct AppStoreStatus: Sendable, Equatable {
        /// `closed` (calls go through), `open` (failing fast), `half_open` (one probe out).
        var circuit: String
        var consecutiveFailures: Int
        /// While open: seconds until the next probe.
        var retryInSeconds: Int?

        var json: JSONValue {
            var members: [Identifier: JSONValue] = [
                "circuit": .string(circuit), "consecutive_failures": .int(consecutiveFailures),
            ]
            if let retryInSeconds { members["retry_in_seconds"] = .int(retryInSeconds) }
            return .object(members)
        }
    }

    static func appStoreStatus(_ client: VerifyReceiptClient) -> AppStoreStatus? {
        guard let state = client.breaker?.state else { return nil }
        switch state {
        case .closed(let failures): return AppStoreStatus(circuit: state.name, consecutiveFailures: failures)
        case .open(let until, _):
            return AppStoreStatus(
                circuit: state.name, consecutiveFailures: 0, retryInSeconds: max(.zero, until - client.now).secondsRoundedUp)
        case .halfOpen: return AppStoreStatus(circuit: state.name, consecutiveFailures: 0)
        }
    }

    static func readiness(
        _ outcome: CheckReadiness.Outcome, appStore: AppStoreStatus? = nil, webhooks: [WebhookOperations.EndpointStatus]? = nil
    ) -> HTTPResponse {
        if let error = outcome.databaseError {
            return .json(
                Readiness(status: "not_ready", database: error, migrationsApplied: 0, migrationsPending: 0).json,
                status: .serviceUnavailable)
        }
        return .json(
            Readiness(
                status: outcome.ready ? "ready" : "not_ready", database: "ok", migrationsApplied: outcome.migrationsApplied,
                migrationsPending: outcome.migrationsPending, appStore: appStore, webhooks: webhooks
            ).json,
            status: outcome.ready ? .ok : .serviceUnavailable)
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
