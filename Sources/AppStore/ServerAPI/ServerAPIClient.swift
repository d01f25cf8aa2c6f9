package import Clocks
package import CoreMetrics
package import CurlTransport
package import Entitlements
package import JSON

/// Asks Apple's App Store Server API (Docs/apple-protocols.md §4): each call runs
/// ``ServerAPICallMachine``'s actions over the libcurl transport, after the app's
/// ``ServerAPIRateLimiter`` allows it, with a bearer ``ServerAPIToken``. Every signed payload that
/// comes back goes through ``SignedDataVerifier`` before anyone sees it.
package struct ServerAPIClient: Sendable {
    package struct Configuration: Sendable {
        /// Defaults: the hosts Apple's libraries use since 2026-05 (§4.2).
        package var productionURL: String
        package var sandboxURL: String
        package var policy: ServerAPIRetryPolicy
        /// Whether sandbox is asked when production does not know a transaction id.
        package var sandbox: Bool

        package init(
            productionURL: String = "https://api.storekit.apple.com",
            sandboxURL: String = "https://api.storekit-sandbox.apple.com",
            policy: ServerAPIRetryPolicy = .init(), sandbox: Bool = true
        ) {
            self.productionURL = productionURL
            self.sandboxURL = sandboxURL
            self.policy = policy
            self.sandbox = sandbox
        }
    }

    /// A customer's transactions, every page of Get Transaction History v2.
    package struct History: Sendable, Equatable {
        package var environment: StoreEnvironment
        package var transactions: [SignedTransaction]
        /// Pages asked for.
        package var pages: Int
    }

    /// Get All Subscription Statuses: each subscription's status and newest signed data.
    package struct Statuses: Sendable, Equatable {
        package struct Subscription: Sendable, Equatable {
            package var groupID: String
            /// 1 active, 2 expired, 3 billing retry, 4 grace period, 5 revoked (§3.8).
            package var status: Int64?
            package var transaction: SignedTransaction?
            package var renewal: SignedRenewalInfo?
        }
        package var environment: StoreEnvironment
        package var subscriptions: [Subscription]
    }

    /// One page of Get Notification History; the payloads are verified by the notification path.
    package struct NotificationHistoryPage: Sendable, Equatable {
        package var signedPayloads: [String]
        package var hasMore: Bool
        package var paginationToken: String?
    }

    /// Look Up Order ID: `status` 0 valid, 1 invalid; the order's transactions.
    package struct OrderLookup: Sendable, Equatable {
        package var valid: Bool
        package var environment: StoreEnvironment
        package var transactions: [SignedTransaction]
    }

    /// Extend a Subscription Renewal Date's answer.
    package struct Extension: Sendable, Equatable {
        package var originalTransactionID: String?
        package var webOrderLineItemID: String?
        package var success: Bool
        /// The new expiry (epoch ms).
        package var effectiveDate: Int64?
        package var environment: StoreEnvironment
    }

    /// Get Test Notification Status's answer.
    package struct TestNotificationStatus: Sendable, Equatable {
        package var signedPayload: String?
        /// Each attempt's result as Apple names it (`SUCCESS`, `NO_RESPONSE`, …).
        package var attempts: [String]
    }

    package let configuration: Configuration
    private let token: ServerAPIToken
    private let transport: any HTTPTransport
    private let verifier: SignedDataVerifier
    private let limiter: ServerAPIRateLimiter
    private let clock: any MonotonicClock
    private let wallClock: WallClock
    private let random: @Sendable () -> Double
    private let metrics: any MetricsFactory
    /// Pages of one history read at most (20 transactions each): a bound, not a business rule.
    package static let maxPages = 1_000

    package init(
        configuration: Configuration, token: ServerAPIToken, transport: any HTTPTransport, verifier: SignedDataVerifier,
        limiter: ServerAPIRateLimiter = .init(), clock: any MonotonicClock = SystemMonotonicClock(),
        wallClock: WallClock = .system, random: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) },
        metrics: any MetricsFactory = NOOPMetricsHandler.instance
    ) {
        self.configuration = configuration
        self.token = token
        self.transport = transport
        self.verifier = verifier
        self.limiter = limiter
        self.clock = clock
        self.wallClock = wallClock
        self.random = random
        self.metrics = metrics
    }

    // MARK: Endpoints

    /// Get Transaction History v2, every page (`revision`), for any transaction id of the customer.
    package func transactionHistory(of transactionID: String, bundleID: String) async throws(ServerAPIFailure) -> History {
        try await pages(of: .transactionHistory, id: transactionID, bundleID: bundleID)
    }

    /// Get All Subscription Statuses for any transaction id of the customer.
    package func subscriptionStatuses(of transactionID: String, bundleID: String) async throws(ServerAPIFailure) -> Statuses {
        let answer = try await call(.subscriptionStatuses, ids: [transactionID], bundleID: bundleID)
        let body = try ServerAPIResponses.statuses(answer.body)
        var subscriptions: [Statuses.Subscription] = []
        for last in body.last {
            var item = Statuses.Subscription(groupID: last.groupID, status: last.status)
            if let jws = last.signedTransaction {
                item.transaction = try await transaction(jws)
            }
            if let jws = last.signedRenewal {
                item.renewal = try await renewal(jws)
            }
            subscriptions.append(item)
        }
        return Statuses(environment: answer.environment, subscriptions: subscriptions)
    }

    /// Get Transaction Info: one transaction, any product type.
    package func transactionInfo(_ transactionID: String, bundleID: String) async throws(ServerAPIFailure) -> SignedTransaction {
        let answer = try await call(.transactionInfo, ids: [transactionID], bundleID: bundleID)
        guard let jws = try ServerAPIResponses.json(answer.body)["signedTransactionInfo"]?.string else {
            throw .badAnswer("no signedTransactionInfo")
        }
        return try await transaction(jws)
    }

    /// Get App Transaction Info: the customer's AppTransaction, found by any transaction id of
    /// theirs; verified like any of Apple's signed data.
    package func appTransactionInfo(_ transactionID: String, bundleID: String) async throws(ServerAPIFailure)
        -> SignedAppTransaction
    {
        let answer = try await call(.appTransactionInfo, ids: [transactionID], bundleID: bundleID)
        guard let jws = try ServerAPIResponses.json(answer.body)["signedAppTransactionInfo"]?.string else {
            throw .badAnswer("no signedAppTransactionInfo")
        }
        do { return try await verifier.appTransaction(jws) } catch { throw .signedData(error) }
    }

    /// Get Refund History v2, every page: the customer's refunded and revoked transactions.
    package func refundHistory(of transactionID: String, bundleID: String) async throws(ServerAPIFailure) -> [SignedTransaction] {
        try await pages(of: .refundHistory, id: transactionID, bundleID: bundleID).transactions
    }

    /// One page of Get Notification History (V2 notifications Apple sent, or tried to send,
    /// between the two dates, epoch ms, start inclusive).
    package func notificationHistory(
        bundleID: String, environment: StoreEnvironment, startDate: Int64, endDate: Int64, paginationToken: String? = nil
    ) async throws(ServerAPIFailure) -> NotificationHistoryPage {
        let body = JSONValue.object(["startDate": .int(startDate), "endDate": .int(endDate)]).jsonBytes
        let answer = try await call(
            .notificationHistory, bundleID: bundleID, query: paginationToken.map { [("paginationToken", $0)] } ?? [],
            body: body, first: environment)
        return try ServerAPIResponses.notificationPage(answer.body)
    }

    /// Request a Test Notification: Apple sends a `TEST` notification to the configured URL; the
    /// token asks for its status.
    package func requestTestNotification(bundleID: String, environment: StoreEnvironment) async throws(ServerAPIFailure)
        -> String
    {
        let answer = try await call(.requestTestNotification, bundleID: bundleID, body: [], first: environment)
        guard let token = try ServerAPIResponses.json(answer.body)["testNotificationToken"]?.string else {
            throw .badAnswer("no testNotificationToken")
        }
        return token
    }

    /// Get Test Notification Status.
    package func testNotificationStatus(_ testToken: String, bundleID: String, environment: StoreEnvironment)
        async throws(ServerAPIFailure) -> TestNotificationStatus
    {
        let answer = try await call(.testNotificationStatus, ids: [testToken], bundleID: bundleID, first: environment)
        let v = try ServerAPIResponses.json(answer.body)
        return TestNotificationStatus(
            signedPayload: v["signedPayload"]?.string,
            attempts: (v["sendAttempts"]?.array ?? []).compactMap { $0["sendAttemptResult"]?.string })
    }

    /// Look Up Order ID (the id on the customer's Apple invoice), in `environment`.
    package func lookUpOrder(_ orderID: String, bundleID: String, environment: StoreEnvironment = .production)
        async throws(ServerAPIFailure) -> OrderLookup
    {
        let answer = try await call(.lookUpOrderID, ids: [orderID], bundleID: bundleID, first: environment)
        let v = try ServerAPIResponses.json(answer.body)
        var transactions: [SignedTransaction] = []
        for jws in try ServerAPIResponses.strings(v["signedTransactions"] ?? .array([]), "signedTransactions") {
            transactions.append(try await transaction(jws))
        }
        return OrderLookup(valid: v["status"]?.int64 == 0, environment: answer.environment, transactions: transactions)
    }

    /// Extend a Subscription Renewal Date by `days` (1…90), `reasonCode` 0 undeclared, 1 customer
    /// satisfaction, 2 other, 3 service issue or outage; `requestID` makes a retry idempotent.
    package func extendRenewalDate(
        originalTransactionID: String, bundleID: String, days: Int, reasonCode: Int, requestID: String
    ) async throws(ServerAPIFailure) -> Extension {
        let body = JSONValue.object([
            "extendByDays": .int(Int64(days)), "extendReasonCode": .int(Int64(reasonCode)),
            "requestIdentifier": .string(requestID),
        ]).jsonBytes
        let answer = try await call(.extendRenewalDate, ids: [originalTransactionID], bundleID: bundleID, body: body)
        let v = try ServerAPIResponses.json(answer.body)
        return Extension(
            originalTransactionID: v["originalTransactionId"]?.string, webOrderLineItemID: v["webOrderLineItemId"]?.string,
            success: v["success"]?.bool ?? false, effectiveDate: v["effectiveDate"]?.int64, environment: answer.environment)
    }

    /// Send Consumption Information (the answer to a `CONSUMPTION_REQUEST`), v2 path.
    package func sendConsumption(transactionID: String, bundleID: String, environment: StoreEnvironment, _ body: JSONValue)
        async throws(ServerAPIFailure)
    {
        _ = try await call(.sendConsumption, ids: [transactionID], bundleID: bundleID, body: body.jsonBytes, first: environment)
    }

    /// Finish Transaction (API 1.20): tells Apple the transaction's content was delivered, as
    /// StoreKit's `finish()` does from the app
    /// (https://developer.apple.com/documentation/appstoreserverapi/finish-transaction).
    package func finishTransaction(_ transactionID: String, bundleID: String, environment: StoreEnvironment)
        async throws(ServerAPIFailure)
    {
        _ = try await call(.finishTransaction, ids: [transactionID], bundleID: bundleID, first: environment)
    }

    /// Set App Account Token (API 1.16): `token` (a UUID) becomes the purchase `originalTransactionID`'s
    /// appAccountToken at Apple, so its later transactions and notifications carry it
    /// (https://developer.apple.com/documentation/appstoreserverapi/set-app-account-token).
    package func setAppAccountToken(
        _ token: String, originalTransactionID: String, bundleID: String, environment: StoreEnvironment
    ) async throws(ServerAPIFailure) {
        let body = JSONValue.object(["appAccountToken": .string(token)]).jsonBytes
        _ = try await call(.setAppAccountToken, ids: [originalTransactionID], bundleID: bundleID, body: body, first: environment)
    }

    /// Extend Subscription Renewal Dates for All Active Subscribers (API 1.7): every active
    /// subscription to `productID`, in `storefronts` (ISO 3166-1 alpha-3; empty: all), by `days`
    /// (1…90). Apple works through them over hours or days; `requestID` (kept for the status)
    /// makes a retry the same request
    /// (https://developer.apple.com/documentation/appstoreserverapi/extend-subscription-renewal-dates-for-all-active-subscribers).
    /// The `requestIdentifier` Apple echoes.
    package func massExtendRenewalDates(
        productID: String, storefronts: [String], days: Int, reasonCode: Int, requestID: String, bundleID: String,
        environment: StoreEnvironment
    ) async throws(ServerAPIFailure) -> String {
        var body: [Identifier: JSONValue] = [
            "productId": .string(productID), "extendByDays": .int(Int64(days)), "extendReasonCode": .int(Int64(reasonCode)),
            "requestIdentifier": .string(requestID),
        ]
        if !storefronts.isEmpty { body["storefrontCountryCodes"] = .array(storefronts.map(JSONValue.string)) }
        // The product id travels in the body, yet is held to the format it has in the status's path.
        guard AppleIdentifier.isValid(productID, as: .productID) else { throw .invalidIdentifier(.productID) }
        guard AppleIdentifier.isValid(requestID, as: .requestIdentifier) else { throw .invalidIdentifier(.requestIdentifier) }
        let answer = try await call(
            .massExtendRenewalDates, bundleID: bundleID, body: JSONValue.object(body).jsonBytes, first: environment)
        guard let echoed = try ServerAPIResponses.json(answer.body)["requestIdentifier"]?.string else {
            throw .badAnswer("no requestIdentifier")
        }
        return echoed
    }

    /// Get Status of Subscription Renewal Date Extensions's answer.
    package struct MassExtensionStatus: Sendable, Equatable {
        package var requestIdentifier: String?
        package var complete: Bool
        /// When Apple finished (epoch ms).
        package var completeDate: Int64?
        package var succeededCount: Int64?
        package var failedCount: Int64?
    }

    /// Get Status of Subscription Renewal Date Extensions (API 1.7) for a mass extension of `productID`.
    package func massExtensionStatus(
        productID: String, requestID: String, bundleID: String, environment: StoreEnvironment
    ) async throws(ServerAPIFailure) -> MassExtensionStatus {
        let answer = try await call(.massExtensionStatus, ids: [productID, requestID], bundleID: bundleID, first: environment)
        let v = try ServerAPIResponses.json(answer.body)
        return MassExtensionStatus(
            requestIdentifier: v["requestIdentifier"]?.string, complete: v["complete"]?.bool ?? false,
            completeDate: v["completeDate"]?.int64, succeededCount: v["succeededCount"]?.int64,
            failedCount: v["failedCount"]?.int64)
    }

    // MARK: Exchanges

    /// Every page of a revision-paged endpoint (history, refund history), asked in the
    /// environment that answered the first, each transaction verified.
    private func pages(of endpoint: ServerAPIEndpoint, id: String, bundleID: String) async throws(ServerAPIFailure) -> History {
        var environment: StoreEnvironment?
        var revision: String?
        var signed: [String] = []
        var pages = 0
        repeat {
            let answer = try await call(
                endpoint, ids: [id], bundleID: bundleID, query: revision.map { [("revision", $0)] } ?? [], first: environment)
            environment = answer.environment
            let page = try ServerAPIResponses.transactionPage(answer.body)
            signed += page.signedTransactions
            pages += 1
            guard page.hasMore else { break }
            guard let next = page.revision, next != revision else { throw .badAnswer("hasMore without a new revision") }
            revision = next
        } while pages < Self.maxPages
        var transactions: [SignedTransaction] = []
        for jws in signed { transactions.append(try await transaction(jws)) }
        return History(environment: environment ?? .production, transactions: transactions, pages: pages)
    }

    private func transaction(_ jws: String) async throws(ServerAPIFailure) -> SignedTransaction {
        do { return try await verifier.transaction(jws) } catch { throw .signedData(error) }
    }

    private func renewal(_ jws: String) async throws(ServerAPIFailure) -> SignedRenewalInfo {
        do { return try await verifier.renewalInfo(jws) } catch { throw .signedData(error) }
    }

    /// One call: the machine's exchanges, each after the rate limiter's wait, until it finishes.
    /// `first` nil: production, then sandbox for an unknown transaction id.
    func call(
        _ endpoint: ServerAPIEndpoint, ids: [String] = [], bundleID: String, query: [(String, String)] = [],
        body: [UInt8]? = nil, first: StoreEnvironment? = nil
    ) async throws(ServerAPIFailure) -> ServerAPIAnswer {
        // Each id must have the format of the kind the endpoint takes there, or nothing is sent.
        var segments: [AppleIdentifier] = []
        for (i, kind) in endpoint.idKinds.enumerated() {
            guard let valid = AppleIdentifier(i < ids.count ? ids[i] : "", kind) else {
                let failure = ServerAPIFailure.invalidIdentifier(kind)
                record(endpoint, first ?? .production, .failure(failure))
                throw failure
            }
            segments.append(valid)
        }
        let bearer: String
        // No key for the app's account (status 0: nothing was sent), or signing failed.
        do { bearer = try token.token(for: bundleID) } catch { throw .unauthorized(status: 0) }
        var machine = ServerAPICallMachine(
            policy: configuration.policy, now: clock.now, first: first ?? .production,
            switchesToSandbox: first == nil && configuration.sandbox && endpoint.switchesToSandbox)
        var action = machine.begin()
        while true {
            switch action {
            case .finish(let result):
                record(endpoint, machine.currentEnvironment, result)
                return try result.get()
            case .send(let environment, let delay, let timeout):
                if delay > .zero { await clock.sleep(for: delay) }
                let wait = limiter.reserve(bundleID: bundleID, endpoint: endpoint, environment: environment, now: clock.now)
                if wait > .zero {
                    guard wait < timeout else {
                        let failure = ServerAPIFailure.unavailable(
                            reason: "receiptd's own rate limit for \(endpoint.rawValue)", retryAfter: wait)
                        record(endpoint, environment, .failure(failure))
                        throw failure
                    }
                    await clock.sleep(for: wait)
                }
                let base = environment == .production ? configuration.productionURL : configuration.sandboxURL
                let request = OutboundRequest(
                    method: endpoint.method, url: base + endpoint.path(segments) + Self.queryString(query),
                    headers: ["Authorization: Bearer \(bearer)", "User-Agent: receiptd"], body: body, timeout: timeout)
                let exchange: ServerAPICallMachine.Exchange
                switch await transport.send(request) {
                case .failure(let reason): exchange = .failure(reason)
                case .response(let status, let body, let retryAfter):
                    // A UNIX time in milliseconds (§4.4).
                    let retryAfterMs = retryAfter.flatMap { Int64(String($0.filter { $0 != " " })) }
                    exchange = .http(
                        status: status, body: body, error: (200..<300).contains(status) ? nil : ServerAPIResponses.error(body),
                        retryAfterMs: retryAfterMs)
                    if status == 429, let ms = retryAfterMs {
                        let now = clock.now
                        limiter.hold(
                            bundleID: bundleID, endpoint: endpoint, environment: environment,
                            until: now + .milliseconds(max(0, ms - wallClock.now())), now: now)
                    }
                }
                action = machine.received(exchange, now: clock.now, wallNowMs: wallClock.now(), random: random())
            }
        }
    }

    static func queryString(_ query: [(String, String)]) -> String {
        query.isEmpty
            ? ""
            : "?" + query.map { ServerAPIEndpoint.escaped($0.0) + "=" + ServerAPIEndpoint.escaped($0.1) }.joined(separator: "&")
    }

    /// `appstore_server_api_calls_total{endpoint, environment, outcome}`.
    private func record(
        _ endpoint: ServerAPIEndpoint, _ environment: StoreEnvironment, _ result: Result<ServerAPIAnswer, ServerAPIFailure>
    ) {
        let outcome =
            switch result {
            case .success: "ok"
            case .failure(let failure): failure.metricName
            }
        Counter(
            label: "appstore_server_api_calls_total",
            dimensions: [("endpoint", endpoint.rawValue), ("environment", environment.rawValue), ("outcome", outcome)],
            factory: metrics
        ).increment()
    }
}

extension ServerAPIFailure {
    /// The `outcome` label of `appstore_server_api_calls_total`.
    package var metricName: String {
        switch self {
        case .notFound: "not_found"
        case .invalidTransactionID: "invalid_transaction_id"
        case .invalidIdentifier: "invalid_identifier"
        case .unauthorized: "unauthorized"
        case .rejected: "rejected"
        case .unavailable: "unavailable"
        case .badAnswer: "bad_answer"
        case .signedData: "signed_data_refused"
        }
    }
}
