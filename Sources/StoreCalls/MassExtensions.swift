package import AppStore
import Clocks
import CoreMetrics
import DatabaseEngine
package import Entitlements
import FoundationEssentials
import Logging
package import ReceiptCore
import ServiceLifecycle
package import Storage
package import Workers

/// Outage compensation for everyone at once: Apple's Extend Subscription Renewal Dates for All
/// Active Subscribers (API 1.7), asked by product and storefronts from the API or the console.
///
/// A request is stored first (who asked: the audit; its id: Apple's `requestIdentifier`, so a
/// retry is the same request, here and at Apple), then sent. Apple works through the
/// subscriptions over hours or days; its status is polled (`appStore.massExtensions.pollSeconds`)
/// until complete, or Apple's `RENEWAL_EXTENSION`/`SUMMARY` notification says so first. Then the
/// new expiry of every stored subscription the request reached (held here, of its product, app
/// and environment, running when it was asked, in its storefronts) is fetched through the
/// refresher and stored, slice by slice, resumable. Each step is due at a time and claimed under
/// a lease, so any instance works it, once, across restarts. Apple unavailable: tried again with
/// backoff; nothing is ever revoked by a failure here.
package final class MassExtensions: UseCase, Sendable {
    package struct Settings: Sendable, Equatable {
        /// How often Apple is asked whether a request is complete.
        package var pollMs: Int64
        /// Backoff, lease and the loop's own pace.
        package var queue: LeasedQueueSettings
        /// Held subscriptions looked at per database hop of a refresh (the lease is renewed after each).
        package var refreshSlice: Int
        /// Subscriptions asked of Apple at once during a refresh.
        package var refreshConcurrency: Int

        package init(
            pollMs: Int64 = 300_000, queue: LeasedQueueSettings = LeasedQueueSettings(), refreshSlice: Int = 200,
            refreshConcurrency: Int = 8
        ) {
            self.pollMs = pollMs
            self.queue = queue
            self.refreshSlice = refreshSlice
            self.refreshConcurrency = max(1, refreshConcurrency)
        }
    }

    /// What is asked: the app (nil: the only one configured), the environment (nil: production),
    /// the product, its storefronts (empty: all), by how many days, why, and the request's id.
    package struct Request: Sendable, Equatable {
        package var bundleID: String?
        package var environment: StoreEnvironment?
        package var productID: String
        package var storefronts: [String]
        package var days: Int
        package var reason: AppStoreSupport.ExtendReason
        package var requestID: String

        package init(
            bundleID: String? = nil, environment: StoreEnvironment? = nil, productID: String, storefronts: [String] = [],
            days: Int, reason: AppStoreSupport.ExtendReason, requestID: String
        ) {
            self.bundleID = bundleID
            self.environment = environment
            self.productID = productID
            self.storefronts = storefronts
            self.days = days
            self.reason = reason
            self.requestID = requestID
        }
    }

    let serverAPI: ServerAPIClient?
    let refresher: Refresher
    let settings: Settings
    package let context: UseCaseContext
    let bundleIDs: [String]
    let environments: [StoreEnvironment]
    package let doorbell: Doorbell

    package init(
        context: UseCaseContext, serverAPI: ServerAPIClient?, refresher: Refresher, settings: Settings = Settings(),
        bundleIDs: [String], environments: [StoreEnvironment], doorbell: Doorbell = Doorbell()
    ) {
        self.serverAPI = serverAPI
        self.refresher = refresher
        self.settings = settings
        self.context = context
        self.bundleIDs = bundleIDs
        self.environments = environments
        self.doorbell = doorbell
    }

    // MARK: Asking

    /// Stores the request and sends it to Apple; `asker` (the key's fingerprint) is kept with it.
    /// A request id stored already returns that request (`created` false) when it asks the same,
    /// else ``ReceiptError/requestIDReused(_:)``. Apple refusing a new request for good throws its
    /// refusal (the request stays, `refused`, for the record); Apple unavailable leaves it
    /// `submitting`, sent again with backoff.
    package func request(_ asked: Request, by asker: String) async throws(ReceiptError) -> (
        record: Progress, created: Bool
    ) {
        guard let serverAPI else { throw .notConfigured(.serverAPI) }
        let wanted = try Self.validated(asked, by: asker, at: clock.now(), bundleIDs: bundleIDs, environments: environments)
        let lease = wanted.requestedAt + settings.queue.leaseMs
        let stored: MassExtensionRecord?
        do {
            stored = try await database.write { db in
                let store = MassExtensionStore(db)
                return try store.insert(wanted, leaseUntil: lease) ? nil : try store.find(wanted.requestID)
            }
        } catch {
            logger.error("mass extension: cannot store the request", metadata: ["error": "\(error)"])
            throw .internalFault
        }
        if let stored {
            guard stored.asksTheSame(as: wanted) else {
                throw .requestIDReused("`request_id` \(wanted.requestID) already names another mass extension.")
            }
            return (Progress(stored), false)
        }
        logger.notice(
            "mass extension requested",
            metadata: [
                "request_id": "\(wanted.requestID)", "product_id": "\(wanted.productID)", "bundle_id": "\(wanted.bundleID)",
                "environment": "\(wanted.environment)", "days": "\(wanted.days)", "reason": "\(wanted.reason)",
                "storefronts": "\(wanted.storefronts.isEmpty ? "all" : wanted.storefronts.joined(separator: ","))",
                "requested_by": "\(asker)",
            ])
        let (sent, failure) = await submit(wanted, serverAPI: serverAPI)
        do {
            _ = try await database.write { db in try MassExtensionStore(db).save(sent, claimedStatus: .submitting) }
        } catch {
            logger.error("mass extension: cannot store its progress", metadata: ["error": "\(error)"])
            throw .internalFault
        }
        await recordRunning()
        if sent.status == .refused, let failure { throw refusal(failure) }
        return (Progress(sent), true)
    }

    package func find(_ requestID: String) async throws(ReceiptError) -> Progress {
        guard UUID(uuidString: requestID) != nil else { throw .massExtensionNotFound }
        let found: MassExtensionRecord?
        do {
            found = try await database.read { db in try MassExtensionStore(db).find(requestID.lowercased()) }
        } catch {
            logger.error("mass extension: cannot read", metadata: ["error": "\(error)"])
            throw .internalFault
        }
        guard let found else { throw .massExtensionNotFound }
        return Progress(found)
    }

    /// Newest first, `limit` at a time after the cursor `before`.
    package func list(limit: Int, before: (requestedAt: Int64, requestID: String)?) async throws(ReceiptError)
        -> [Progress]
    {
        do {
            return try await database.read { db in try MassExtensionStore(db).list(limit: limit, before: before) }.map(
                Progress.init)
        } catch {
            logger.error("mass extensions: cannot list", metadata: ["error": "\(error)"])
            throw .internalFault
        }
    }

    /// The request as stored: checked, the app (of `bundleIDs`) and environment (of
    /// `environments`) settled, the id lowercased, storefronts once each and in order.
    static func validated(
        _ asked: Request, by asker: String, at now: Int64, bundleIDs: [String], environments: [StoreEnvironment]
    ) throws(ReceiptError) -> MassExtensionRecord {
        guard AppleIdentifier.isValid(asked.productID, as: .productID) else {
            throw .invalidRequest("`product_id` must be a product id: letters, digits, `.`, `_` or `-`, at most 128.")
        }
        guard (1...90).contains(asked.days) else { throw .invalidRequest("`days` must be 1 to 90 (Apple's limit).") }
        guard asked.storefronts.count <= 300,
            asked.storefronts.allSatisfy({ $0.utf8.count == 3 && $0.utf8.allSatisfy { $0 >= 0x41 && $0 <= 0x5A } })
        else {
            throw .invalidRequest("`storefronts` must be ISO 3166-1 alpha-3 codes in capitals (USA, CAN, …), at most 300.")
        }
        guard let requestID = UUID(uuidString: asked.requestID).map({ $0.uuidString.lowercased() }) else {
            throw .invalidRequest("`request_id` must be a UUID.")
        }
        let bundleID: String
        if let named = asked.bundleID {
            try FieldRules.bundleID(named)
            guard bundleIDs.contains(named) else { throw .bundleMismatch("`bundle_id` is not a configured app.") }
            bundleID = named
        } else {
            guard bundleIDs.count == 1 else {
                throw .invalidRequest("`bundle_id` is required: receiptd serves \(bundleIDs.count) apps.")
            }
            bundleID = bundleIDs[0]
        }
        let environment = asked.environment ?? .production
        guard environments.contains(environment) else {
            throw .invalidRequest("`environment` \(environment.rawValue) is not one receiptd accepts (appStore.environments).")
        }
        return MassExtensionRecord(
            requestID: requestID, bundleID: bundleID, environment: environment.rawValue, productID: asked.productID,
            storefronts: Array(Set(asked.storefronts)).sorted(), days: asked.days, reason: asked.reason.rawValue,
            requestedBy: asker, requestedAt: now, dueAt: now)
    }

    // MARK: Working

    /// Whether there is a Server API to ask: without one, nothing is worked (and asking fails).
    package var isEnabled: Bool { serverAPI != nil }

    /// Told of each pass of ``LeasedQueue/run()``.
    package let quiescence = Quiescence()
    package let queueName = "mass extensions"
    package var leasing: LeasedQueueSettings { settings.queue }
    /// One request's step at a time, as before the queue was shared: a refresh already asks Apple
    /// about `refreshConcurrency` subscriptions at once.
    package static var makesChoresAtOnce: Bool { false }

    /// The requests whose next step is due (none without a Server API to ask).
    package func claimDue() async throws -> [MassExtensionRecord] {
        guard serverAPI != nil else { return [] }
        let now = clock.now()
        return try await database.write { [settings] db in
            try MassExtensionStore(db).claim(now: now, leaseMs: settings.queue.leaseMs, limit: settings.queue.batch)
        }
    }

    /// Takes a request one step on and stores where it stands.
    package func make(_ claimed: MassExtensionRecord) async {
        guard let serverAPI else { return }
        let next: MassExtensionRecord
        switch claimed.status {
        case .submitting: next = await submit(claimed, serverAPI: serverAPI).record
        case .inProgress: next = await poll(claimed, serverAPI: serverAPI)
        case .refreshing: next = await refresh(claimed)
        case .complete, .refused:
            var settled = claimed
            settled.dueAt = nil
            next = settled
        }
        do {
            _ = try await database.write { db in try MassExtensionStore(db).save(next, claimedStatus: claimed.status) }
        } catch {
            logger.error("mass extension: cannot store its progress", metadata: ["error": "\(error)"])
        }
    }

    package func passEnded() async { await recordRunning() }

    /// Sends the request to Apple: in progress, refused for good, or due again with backoff.
    private func submit(_ claimed: MassExtensionRecord, serverAPI: ServerAPIClient) async -> (
        record: MassExtensionRecord, failure: ServerAPIFailure?
    ) {
        var r = claimed
        let environment = StoreEnvironment(rawValue: r.environment) ?? .production
        do {
            _ = try await serverAPI.massExtendRenewalDates(
                productID: r.productID, storefronts: r.storefronts, days: r.days,
                reasonCode: (AppStoreSupport.ExtendReason(rawValue: r.reason) ?? .undeclared).appleCode, requestID: r.requestID,
                bundleID: r.bundleID, environment: environment)
            let now = clock.now()
            (r.status, r.submittedAt, r.dueAt, r.attempts, r.lastError) = (.inProgress, now, now + settings.pollMs, 0, nil)
            logger.notice("mass extension accepted by Apple", metadata: ["request_id": "\(r.requestID)"])
            return (r, nil)
        } catch {
            let now = clock.now()
            r.lastError = error.description
            switch error {
            case .rejected, .invalidIdentifier, .notFound, .invalidTransactionID:
                (r.status, r.dueAt, r.finishedAt) = (.refused, nil, now)
                r.attempts += 1
                logger.error("Apple refused a mass extension", metadata: ["request_id": "\(r.requestID)", "error": "\(error)"])
            case .unauthorized, .unavailable, .badAnswer, .signedData:
                r.dueAt = now + settings.queue.backoff(attempts: r.attempts)
                r.attempts += 1
                logger.warning(
                    "mass extension not sent yet; tried again later",
                    metadata: ["request_id": "\(r.requestID)", "error": "\(error)"])
            }
            return (r, error)
        }
    }

    /// Asks Apple whether the request is complete: then its new expiries are due to be fetched.
    private func poll(_ claimed: MassExtensionRecord, serverAPI: ServerAPIClient) async -> MassExtensionRecord {
        var r = claimed
        do {
            let status = try await serverAPI.massExtensionStatus(
                productID: r.productID, requestID: r.requestID, bundleID: r.bundleID,
                environment: StoreEnvironment(rawValue: r.environment) ?? .production)
            let now = clock.now()
            (r.attempts, r.lastError) = (0, nil)
            guard status.complete else {
                r.dueAt = now + settings.pollMs
                return r
            }
            (r.status, r.appleCompletedAt, r.dueAt) = (.refreshing, status.completeDate ?? now, now)
            (r.succeededCount, r.failedCount) = (status.succeededCount, status.failedCount)
            logger.notice(
                "mass extension complete at Apple; fetching the new expiries",
                metadata: [
                    "request_id": "\(r.requestID)", "succeeded": "\(status.succeededCount ?? 0)",
                    "failed": "\(status.failedCount ?? 0)",
                ])
            doorbell.ring()
        } catch {
            // Apple accepted the request: whatever the status call says now, it is asked again.
            r.lastError = error.description
            r.dueAt = clock.now() + settings.queue.backoff(attempts: r.attempts)
            r.attempts += 1
        }
        return r
    }

    /// Fetches and stores the new expiry of each stored subscription the request reached, a slice
    /// of held purchases at a time, saving the progress after each. Apple unavailable for one:
    /// stopped there, due again with backoff.
    private func refresh(_ claimed: MassExtensionRecord) async -> MassExtensionRecord {
        var r = claimed
        while true {
            let slice: (through: String?, reached: [(original: String, holder: String, expiresAt: Int64)])
            do {
                slice = try await database.read { [settings, r] db in
                    let through = try RefreshStore(db).sliceEnd(after: r.refreshAfter, count: settings.refreshSlice)
                    return (through, try MassExtensionStore(db).reached(by: r, after: r.refreshAfter, through: through))
                }
            } catch {
                logger.error("mass extension: cannot read the subscriptions reached", metadata: ["error": "\(error)"])
                r.dueAt = clock.now() + settings.queue.backoff(attempts: r.attempts)
                r.attempts += 1
                return r
            }
            // A few at a time (Apple answers in hundreds of milliseconds; the client's rate limiter
            // keeps to Apple's limit), the progress moved past a group only once all of it is done.
            var start = 0
            while start < slice.reached.count {
                let group = Array(slice.reached[start..<min(start + settings.refreshConcurrency, slice.reached.count)])
                let unavailable = await withTaskGroup(of: Bool.self) { tasks in
                    for subscription in group {
                        let candidate = RefreshCandidate(
                            originalTransactionID: subscription.original, holder: subscription.holder,
                            expiresAt: subscription.expiresAt, inBillingRetry: false, gracePeriodExpiresAt: nil,
                            lastCheckedAt: nil, failures: 0, nextAttemptAt: nil)
                        tasks.addTask { [refresher] in
                            if case .unavailable = await refresher.refresh(candidate) { return true }
                            return false
                        }
                    }
                    return await tasks.contains(true)
                }
                if unavailable {
                    r.lastError = "Apple could not answer about a subscription it reached; tried again later."
                    r.dueAt = clock.now() + settings.queue.backoff(attempts: r.attempts)
                    r.attempts += 1
                    return r
                }
                // Refreshed, unknown to Apple now, or being refreshed by another pass: looked at.
                r.refreshed += group.count
                r.refreshAfter = group.last?.original
                start += group.count
            }
            let now = clock.now()
            (r.attempts, r.lastError) = (0, nil)
            guard let through = slice.through else {
                (r.status, r.finishedAt, r.dueAt) = (.complete, now, nil)
                logger.notice(
                    "mass extension complete: new expiries stored",
                    metadata: ["request_id": "\(r.requestID)", "subscriptions": "\(r.refreshed)"])
                return r
            }
            r.refreshAfter = through
            let saved: Bool
            do {
                saved = try await database.write { [settings, r] db in
                    try MassExtensionStore(db).save(
                        r, claimedStatus: .refreshing, keepingLeaseUntil: now + settings.queue.leaseMs)
                }
            } catch {
                logger.error("mass extension: cannot store its progress", metadata: ["error": "\(error)"])
                r.dueAt = now + settings.queue.backoff(attempts: r.attempts)
                return r
            }
            if !saved { return r }
        }
    }

    /// Apple's refusal of a new request, as its asker is told.
    private func refusal(_ failure: ServerAPIFailure) -> ReceiptError {
        if case .rejected(_, let error) = failure {
            return .appStoreRefused(
                "Apple refused the mass extension" + (error.map { ": \($0.message)" } ?? "."),
                errorCode: error.map { Int($0.code) })
        }
        return ReceiptError(failure, logger: logger)
    }

    /// `mass_extensions_running`: requests not yet complete or refused.
    private func recordRunning() async {
        guard
            let running = try? await database.read({ db in
                try MassExtensionStore(db).running()
            })
        else { return }
        Gauge(label: "mass_extensions_running", factory: metrics).record(running)
    }
}

extension MassExtensions: LeasedQueue, Service {}
