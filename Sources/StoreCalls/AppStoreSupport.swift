package import AppStore
import Clocks
import DatabaseEngine
package import Entitlements
import FoundationEssentials
import Identifiers
import Logging
package import ReceiptCore
import Storage

/// What support does through the App Store Server API: find a purchase by the order id on the
/// customer's Apple invoice (and who holds it here), extend a subscription's renewal date (after
/// an outage, as a goodwill gesture) and store the extended subscription, ask Apple for a test
/// notification. Each refusal is a ``ReceiptError``.
package struct AppStoreSupport: UseCase, Sendable {
    let serverAPI: ServerAPIClient?
    package let context: UseCaseContext
    let bundleIDs: [String]
    /// The apps whose App Store Connect account has a key: those asked when every app is.
    let serverAPIApps: [String]
    let environments: [StoreEnvironment]

    package init(
        context: UseCaseContext, serverAPI: ServerAPIClient?, bundleIDs: [String], serverAPIApps: [String]? = nil,
        environments: [StoreEnvironment]
    ) {
        self.context = context
        self.serverAPI = serverAPI
        self.bundleIDs = bundleIDs
        self.serverAPIApps = serverAPIApps ?? bundleIDs
        self.environments = environments
    }

    // MARK: Look Up Order ID

    /// An order's transactions, each with the app user holding it here (nil: nobody yet).
    package struct Order: Sendable {
        package var orderID: String
        package var environment: StoreEnvironment
        package var transactions: [(transaction: SignedTransaction, holder: String?)]
    }

    /// Look Up Order ID in production (orders are invoices: real purchases only), for each app.
    package func order(_ orderID: String, bundleID: String? = nil) async throws(ReceiptError) -> Order {
        try FieldRules.orderID(orderID)
        let serverAPI = try configured()
        for bundle in try apps(bundleID) {
            let found: ServerAPIClient.OrderLookup
            do {
                found = try await serverAPI.lookUpOrder(orderID, bundleID: bundle)
            } catch {
                throw refusal(error)
            }
            guard found.valid, !found.transactions.isEmpty else { continue }
            let holders: [String?]
            do {
                holders = try await database.read { db in
                    let store = ReceiptStore(db)
                    return try found.transactions.map { try store.owner(of: $0.originalTransactionID) }
                }
            } catch {
                logger.error("order lookup: cannot read holders", metadata: ["error": "\(error)"])
                throw .internalFault
            }
            return Order(
                orderID: orderID, environment: found.environment,
                transactions: Array(zip(found.transactions, holders)).map { ($0.0, $0.1) })
        }
        throw .orderNotFound
    }

    // MARK: Extend a Subscription Renewal Date

    /// Why a renewal date is extended (Apple's `extendReasonCode`).
    package enum ExtendReason: String, Sendable, CaseIterable {
        case undeclared
        case customerSatisfaction = "customer_satisfaction"
        case other
        case serviceIssue = "service_issue"

        var appleCode: Int {
            switch self {
            case .undeclared: 0
            case .customerSatisfaction: 1
            case .other: 2
            case .serviceIssue: 3
            }
        }
    }

    /// An extension asked for: which of the user's subscriptions (nil: the only one they hold),
    /// by how many days, why, and an id that makes a retry the same request at Apple.
    package struct Extension: Sendable, Equatable {
        package var appUserID: String
        package var days: Int
        package var reason: ExtendReason
        package var originalTransactionID: String?
        package var requestID: String

        package init(appUserID: String, days: Int, reason: ExtendReason, originalTransactionID: String? = nil, requestID: String)
        {
            self.appUserID = appUserID
            self.days = days
            self.reason = reason
            self.originalTransactionID = originalTransactionID
            self.requestID = requestID
        }
    }

    /// Apple's answer and the subscriber's document after the extended subscription was stored.
    package struct Extended: Sendable {
        package var originalTransactionID: String
        package var effectiveDate: Int64?
        package var snapshot: SubscriberSnapshot
    }

    /// Extends one of `request.appUserID`'s subscriptions at Apple, then asks Apple for its status
    /// and stores it (the new expiry), as the refresher would.
    package func extend(_ request: Extension) async throws(ReceiptError) -> Extended {
        _ = try FieldRules.appUserID(request.appUserID)
        guard (1...90).contains(request.days) else { throw .invalidRequest("`days` must be 1 to 90 (Apple's limit).") }
        if let original = request.originalTransactionID {
            try FieldRules.transactionID(original, field: "original_transaction_id")
        }
        let serverAPI = try configured()
        let user = request.appUserID
        let begun = clock.now()  // before Apple is asked: an erasure since then wins
        let (original, bundleID) = try await subscription(of: user, named: request.originalTransactionID)
        let answer: ServerAPIClient.Extension
        do {
            answer = try await serverAPI.extendRenewalDate(
                originalTransactionID: original, bundleID: bundleID, days: request.days, reasonCode: request.reason.appleCode,
                requestID: request.requestID)
        } catch {
            throw refusal(error)
        }
        guard answer.success else {
            throw .appStoreRefused("Apple did not extend the subscription.", errorCode: nil)
        }
        logger.notice(
            "subscription extended",
            metadata: [
                "user": "\(user)", "original_transaction_id": "\(original)", "days": "\(request.days)",
                "reason": "\(request.reason.rawValue)",
            ])
        // The new expiry, as Apple now states it.
        let started = monotonic.now
        let statuses: ServerAPIClient.Statuses
        do {
            statuses = try await serverAPI.subscriptionStatuses(of: original, bundleID: bundleID)
        } catch {
            throw ReceiptError(error, logger: logger)
        }
        let facts = Refresher.holderOnly(AppleFacts.facts(of: statuses, history: []), holder: user, original: original)
        let at = clock.now()
        let log = VerificationLogEntry(
            appUserID: user, environment: statuses.environment, appleStatus: nil, outcome: .serverAPI, attempts: 1,
            latencyMs: (monotonic.now - started).milliseconds)
        do {
            let snapshot = try await state.answer(for: user, database: database, now: at) { [state] db in
                try state.save(facts, for: user, policy: .keep, begun: begun, in: db, now: at, log: log)
            }
            return Extended(originalTransactionID: original, effectiveDate: answer.effectiveDate, snapshot: snapshot)
        } catch ReceiptError.receiptInUse {
            // Another user took the purchase while Apple was asked: Apple extended it all the same,
            // its holder's next read states it, and the answer is what `user` holds now.
            guard let current = try? await state.current(user, database: database, now: at) else { throw .internalFault }
            return Extended(
                originalTransactionID: original, effectiveDate: answer.effectiveDate,
                snapshot: SubscriberSnapshot(document: current.document, version: current.version, now: at))
        } catch is ErasedIDs.ErasedMeanwhile {
            throw .erasedMeanwhile
        } catch {
            logger.error("extension: cannot store the extended subscription", metadata: ["error": "\(error)"])
            throw .internalFault
        }
    }

    /// The auto-renewable subscription of `user` to extend: the one named, or the only one held.
    private func subscription(of user: String, named: String?) async throws(ReceiptError) -> (String, String) {
        let held: [(original: String, bundleID: String)]
        do {
            held = try await database.read { db in
                guard let subscriber = try ReceiptStore(db).subscriber(user) else { return [] }
                var seen: [(String, String)] = []
                for p in subscriber.pinnedFacts.purchases where p.expiresDate != nil {
                    guard !seen.contains(where: { $0.0.isExactly(p.originalTransactionID) }),
                        let app = try RefreshStore(db).app(of: p.originalTransactionID)
                    else { continue }
                    seen.append((p.originalTransactionID, app.bundleID))
                }
                return seen
            }
        } catch {
            logger.error("extension: cannot read the subscriber", metadata: ["error": "\(error)"])
            throw .internalFault
        }
        if let named {
            guard let found = held.first(where: { $0.original.isExactly(named) }) else {
                throw .subscriptionNotFound(
                    "The subscriber holds no auto-renewable subscription with that original_transaction_id.")
            }
            return found
        }
        guard let only = held.first else { throw .subscriptionNotFound("The subscriber holds no auto-renewable subscription.") }
        guard held.count == 1 else {
            throw .invalidRequest("The subscriber holds several subscriptions: name one with `original_transaction_id`.")
        }
        return only
    }

    // MARK: Request a Test Notification

    /// Asks Apple to send a `TEST` notification to the app's configured URL; the token Apple
    /// answered (Get Test Notification Status tells what became of it).
    package func testNotification(bundleID: String? = nil, environment: StoreEnvironment? = nil)
        async throws(ReceiptError) -> (token: String, environment: StoreEnvironment)
    {
        let serverAPI = try configured()
        guard let bundle = try apps(bundleID).first else { throw .invalidRequest("No app is configured.") }
        let environment = environment ?? (environments.contains(.production) ? .production : .sandbox)
        guard environments.contains(environment) else {
            throw .invalidRequest(
                "`environment` \(environment.rawValue) is not accepted by this receiptd (appStore.environments).")
        }
        do {
            return (try await serverAPI.requestTestNotification(bundleID: bundle, environment: environment), environment)
        } catch {
            throw refusal(error)
        }
    }

    // MARK: Helpers

    private func configured() throws(ReceiptError) -> ServerAPIClient {
        guard let serverAPI else { throw .notConfigured(.serverAPI) }
        return serverAPI
    }

    /// The app named (a configured one), or every app the Server API can be asked about.
    private func apps(_ bundleID: String?) throws(ReceiptError) -> [String] {
        guard let bundleID else { return serverAPIApps }
        try FieldRules.bundleID(bundleID)
        guard bundleIDs.contains(bundleID) else { throw .bundleMismatch("`bundle_id` is not a configured app.") }
        return [bundleID]
    }

    /// A support request Apple refused with a reason (4xx) is Apple's refusal, said as such;
    /// everything else as any Server API failure.
    private func refusal(_ failure: ServerAPIFailure) -> ReceiptError {
        if case .rejected(_, let error) = failure {
            logger.notice("Apple refused a support request", metadata: ["error": "\(failure)"])
            return .appStoreRefused(
                "Apple refused the request" + (error.map { ": \($0.message)" } ?? "."), errorCode: error.map { Int($0.code) })
        }
        if case .notFound = failure { return .orderNotFound }
        return ReceiptError(failure, logger: logger)
    }
}
