import AppStore
package import Charts
package import Clocks
import CoreMetrics
import CurlTransport
import CustomerOffers
package import DatabaseEngine
import Entitlements
import FoundationEssentials
import GooglePlay
package import HTTPServer
package import Logging
package import Notifications
package import Operations
package import ReceiptCore
import Resilience
package import ServiceLifecycle
import Storage
package import StoreCalls
import UnixSignals
package import Webhooks
package import Workers

/// receiptd assembled: the database (migrated by ``open(configuration:logger:clock:monotonic:)``, before
/// anything binds), the use cases, the routes and the services that run them. Constructing it
/// does no I/O; ``run(before:)`` serves until SIGTERM/SIGINT.
package final class Application: Sendable {
    package let configuration: ServiceConfiguration
    package let database: DatabaseQueue
    package let migrator: Migrator
    package let server: HTTPServer
    /// The listener for RevenueCat's SDKs; nil unless `revenueCat.port` is set.
    package let sdkServer: HTTPServer?
    let transport: CurlMultiTransport
    /// The background refresher (a no-op service unless `refresher.enabled`).
    let refresher: Refresher
    /// Get Notification History at start and on an interval (a no-op service without a Server API key).
    package let catchUp: NotificationCatchUp
    /// Sends the webhook outbox (a no-op service without endpoints), on its own curl thread.
    package let webhooks: WebhookDispatcher
    let webhookTransport: CurlMultiTransport
    /// Rendered documents for GET /v1/subscribers/{id}.
    let documentCache: SubscriberCache
    /// The use cases, for the CLI and for tests that call them without HTTP.
    package let verifyPurchase: VerifyPurchase
    package let verifyPlayPurchase: VerifyPlayPurchase
    package let ingestPlayNotification: IngestPlayNotification
    /// Makes the acknowledgements Google Play is owed; nil when Google Play is off.
    package let playAcknowledgements: AcknowledgePlayPurchases?
    /// Reads the Voided Purchases API at start and on an interval (a no-op service when Google Play is off).
    package let voidedPurchases: CatchUpVoidedPurchases
    package let readSubscriber: ReadSubscriber
    package let eraseSubscriber: EraseSubscriber
    package let ingestNotification: IngestNotification
    package let listings: Listings
    package let support: AppStoreSupport
    package let backfillPrices: BackfillPrices
    /// Keeps the chart rollups current from the change log.
    package let rollups: KeepRollups
    /// Makes the calls owed to the App Store Server API (Finish Transaction, Set App Account
    /// Token); nil unless `appStore.finishConsumables` or `appStore.setAppAccountTokens`.
    package let appStoreCalls: AppStoreCalls?
    /// Mass renewal-date extensions and the worker that takes them to completion.
    package let massExtensions: MassExtensions
    /// What requests started and did not wait for (shadow comparisons, consumption answers).
    package let background: BackgroundWork
    private let logger: Logger

    private init(
        configuration: ServiceConfiguration, database: DatabaseQueue, migrator: Migrator, server: HTTPServer,
        sdkServer: HTTPServer?,
        transport: CurlMultiTransport, refresher: Refresher, catchUp: NotificationCatchUp, webhooks: WebhookDispatcher,
        webhookTransport: CurlMultiTransport, documentCache: SubscriberCache,
        verifyPurchase: VerifyPurchase, play: PlayWiring, readSubscriber: ReadSubscriber,
        eraseSubscriber: EraseSubscriber, ingestNotification: IngestNotification,
        listings: Listings, support: AppStoreSupport, backfillPrices: BackfillPrices, rollups: KeepRollups,
        appStoreCalls: AppStoreCalls?, massExtensions: MassExtensions, background: BackgroundWork, logger: Logger
    ) {
        self.background = background
        self.appStoreCalls = appStoreCalls
        self.massExtensions = massExtensions
        (verifyPlayPurchase, ingestPlayNotification, playAcknowledgements, voidedPurchases) = (
            play.verify, play.ingest, play.acknowledgements, play.voided
        )
        self.catchUp = catchUp
        self.backfillPrices = backfillPrices
        self.rollups = rollups
        self.webhooks = webhooks
        self.webhookTransport = webhookTransport
        self.support = support
        self.ingestNotification = ingestNotification
        self.listings = listings
        self.configuration = configuration
        self.database = database
        self.migrator = migrator
        self.server = server
        self.sdkServer = sdkServer
        self.transport = transport
        self.refresher = refresher
        self.documentCache = documentCache
        self.verifyPurchase = verifyPurchase
        self.readSubscriber = readSubscriber
        self.eraseSubscriber = eraseSubscriber
        self.logger = logger
    }

    /// Opens the database and applies pending migrations (throwing, with nothing bound, when the
    /// database has unknown or edited migrations), then assembles everything. Apple is reached at
    /// `configuration.appStore`'s URLs: the executable points them at the simulator when it runs one.
    /// `clock` is the one wall clock (stored dates, documents, rate limits); `monotonic` the one
    /// clock for durations and waits (Apple's retries and deadlines, the refresher's pacing).
    /// `stores` are stores plugged in beside Apple's and Google's (``PurchaseStore``): POST
    /// /v1/receipts reads their purchases by their name in `store`.
    package static func open(
        configuration: ServiceConfiguration, logger: Logger, clock: WallClock = .system,
        monotonic: any MonotonicClock = SystemMonotonicClock(), stores: [any PurchaseStore] = []
    ) throws -> Application {
        let migrator = Migrator(migrations: try configuration.database.migrations())
        let telemetry = Telemetry()
        let background = BackgroundWork()
        let database = try configuration.database.openQueue(metrics: telemetry.factory)
        let applied = try database.runBlocking { db in try migrator.migrate(db) }
        for migration in applied {
            logger.info("migration applied", metadata: ["migration": "\(migration.name)"])
        }
        let settings = configuration.appStore
        // One curl thread for both stores; each store's URLs are held to https by its own allowHttp.
        let transport = CurlMultiTransport(
            configuration: .init(
                connectTimeout: settings.connectTimeout, maxResponseBytes: settings.maxResponseBytes,
                allowHTTP: settings.allowHTTP || configuration.googlePlay.allowHTTP,
                keptConnections: settings.maxConcurrentCalls))
        // Each app's secrets are its App Store Connect account's, never another's.
        let accounts = settings.appStoreAccounts(offerKey: configuration.offers.key)
        let client = VerifyReceiptClient(
            configuration: .init(
                productionURL: settings.productionURL, sandboxURL: settings.sandboxURL,
                sharedSecretFor: { accounts.sharedSecret(forReceipt: $0) },
                policy: VerifyReceiptPolicy(
                    maxRetries: settings.maxRetries, attemptTimeout: settings.attemptTimeout, deadline: settings.deadline)),
            transport: transport, clock: monotonic, breaker: breaker(settings.breaker, logger: logger),
            limit: ConcurrencyLimit(settings.maxConcurrentCalls), metrics: AppStoreMetrics(factory: telemetry.factory))
        let signed = settings.signedData
        let verifier = SignedDataVerifier(
            configuration: .init(
                roots: signed.roots, bundleIDs: settings.bundleIDs, appAppleIDs: signed.appAppleIDs,
                environments: signed.environments, validationTime: signed.validationTime),
            now: clock.now)
        if signed.environments.contains(.production) && signed.appAppleIDs.isEmpty {
            logger.warning("appStore.appAppleIds is empty: production V2 notifications will be refused as wrong_app")
        }
        let doorbell = Doorbell()
        let hooks = configuration.webhooks
        let appleCalls =
            settings.finishConsumables || settings.setAppAccountTokens
            ? SubscriberState.AppleCalls(
                finishConsumables: settings.finishConsumables, setAppAccountTokens: settings.setAppAccountTokens,
                doorbell: Doorbell(), makeToken: { UUID().uuidString.lowercased() }) : nil
        let state = SubscriberState(
            settings: configuration.entitlementSettings,
            outbox: hooks.endpoints.isEmpty ? nil : WebhookOutbox(endpoints: hooks.endpoints, doorbell: doorbell),
            appleCalls: appleCalls)
        let policy = OwnershipPolicy(rawValue: configuration.api.ownershipPolicy) ?? .transfer
        let context = UseCaseContext(
            database: database, state: state, policy: policy, logger: logger, clock: clock, monotonic: monotonic,
            metrics: telemetry.factory)
        let documentCache = SubscriberCache(capacity: configuration.database.documentCache)
        if documentCache.capacity > 0 { documentCache.follow(database) }
        let serverAPI = (accounts.hasServerAPI ? accounts : nil).map { accounts in
            ServerAPIClient(
                configuration: .init(
                    productionURL: settings.serverAPI.productionURL, sandboxURL: settings.serverAPI.sandboxURL,
                    policy: ServerAPIRetryPolicy(
                        maxRetries: settings.maxRetries, attemptTimeout: settings.attemptTimeout, deadline: settings.deadline),
                    sandbox: signed.environments.contains(.sandbox)),
                token: ServerAPIToken(credentialsFor: { accounts.serverAPICredentials(of: $0) }, clock: clock),
                transport: transport, verifier: verifier,
                clock: monotonic, wallClock: clock, metrics: telemetry.factory)
        }
        let shadow = (settings.verifier == .shadow ? serverAPI : nil).map {
            ShadowComparison(context: context, serverAPI: $0, settings: configuration.entitlementSettings, background: background)
        }
        let verifyPurchase = VerifyPurchase(
            context: context, client: client, serverAPI: serverAPI, mode: settings.verifier, shadow: shadow, verifier: verifier,
            bundleIDs: settings.bundleIDs)
        for store in stores { Store.register(store.store) }
        let plugged = stores.map {
            VerifyStorePurchase(context: context, $0)
        }
        let play = try googlePlay(configuration, transport: transport, context: context)
        let readSubscriber = ReadSubscriber(context: context, cache: documentCache)
        let eraseSubscriber = EraseSubscriber(context: context)
        let addAlias = AddAlias(context: context)
        let exportSubscriber = ExportSubscriber(context: context)
        let attributes = CustomerAttributes(context: context)
        let consumption =
            settings.consumption.enabled
            ? serverAPI.map {
                AnswerConsumptionRequest(context: context, settings: settings.consumption, serverAPI: $0)
            } : nil
        let ingestNotification = IngestNotification(
            context: context, verifier: verifier, bundleIDs: settings.bundleIDs, sharedSecret: { accounts.sharedSecret(of: $0) },
            consumption: consumption, background: background)
        let listings = Listings(context: context)
        let environments = StoreEnvironment.allCases.filter { signed.environments.contains($0) }
        let support = AppStoreSupport(
            context: context, serverAPI: serverAPI, bundleIDs: settings.bundleIDs, serverAPIApps: accounts.serverAPIApps,
            environments: environments)
        let catchUp = NotificationCatchUp(
            context: context, settings: settings.notificationHistory, serverAPI: serverAPI, ingest: ingestNotification,
            // The apps whose account has a key: another's history cannot be asked for.
            bundleIDs: accounts.serverAPIApps, environments: environments)
        // Receivers' slowness and failures stay off the curl thread that talks to Apple.
        let webhookTransport = CurlMultiTransport(
            configuration: .init(
                connectTimeout: settings.connectTimeout, maxResponseBytes: 64 << 10, allowHTTP: hooks.allowHTTP))
        let webhooks = WebhookDispatcher(
            settings: hooks, transport: webhookTransport, database: database, doorbell: doorbell, logger: logger, clock: clock,
            monotonic: monotonic, metrics: telemetry.factory)
        let webhookOperations = WebhookOperations(context: context, settings: hooks, doorbell: doorbell)
        let refresher = Refresher(
            context: context, settings: configuration.refresher, client: client, serverAPI: serverAPI,
            preferServerAPI: settings.verifier == .serverAPI, play: play.api, bundleIDs: settings.bundleIDs)
        let massExtensions = MassExtensions(
            context: context, serverAPI: serverAPI, refresher: refresher, settings: settings.massExtensions,
            bundleIDs: settings.bundleIDs, environments: environments)
        let signOffer = SignOffer(
            context: context, keys: { accounts.offerKey(of: $0) }, rules: configuration.offers.rules,
            bundleIDs: settings.bundleIDs, policy: configuration.policy)
        let auth = apiAuth(configuration, logger: logger)
        let answerRetention = AnswerRetentionRequest(
            context: context, verifier: verifier, rules: configuration.offers.retention, offers: signOffer,
            policy: configuration.policy)
        // One budget per key and per address, whichever listener the purchases are posted to.
        let limiter = RateLimiter(configuration.limits)
        let recordAppTransaction = RecordAppTransaction(
            context: context, verifier: verifier, read: readSubscriber, serverAPI: serverAPI, bundleIDs: settings.bundleIDs)
        let routes = Routes(
            groups: [
                OperationsRoutes(
                    checkReadiness: CheckReadiness(database: database, migrator: migrator), webhooks: webhookOperations,
                    console: Console(), appStore: client, telemetry: telemetry, documentCache: documentCache,
                    metricsRequireKey: configuration.api.metricsRequireKey,
                    openAPI: openAPIDocument(configuration.openAPIFile, logger: logger)),
                PurchaseRoutes(
                    auth: auth,
                    purchases: PurchaseReaders(verifyPurchase: verifyPurchase, verifyPlayPurchase: play.verify, plugged: plugged),
                    recordAppTransaction: recordAppTransaction,
                    limiter: limiter, clock: clock),
                SubscriberRoutes(
                    readSubscriber: readSubscriber, eraseSubscriber: eraseSubscriber, addAlias: addAlias,
                    exportSubscriber: exportSubscriber, refresher: refresher, attributes: attributes),
                NotificationRoutes(
                    ingestPlayNotification: play.ingest, ingestNotification: ingestNotification, listings: listings,
                    telemetry: telemetry, logger: logger),
                OfferRoutes(auth: auth, signOffer: signOffer, answerRetention: answerRetention),
                RetentionRoutes(answerRetention: answerRetention, clock: clock),
                SupportRoutes(
                    support: support, massExtensions: massExtensions,
                    promote: PromoteSubscriber(context: context, read: readSubscriber)),
                AdminRoutes(
                    listings: listings, offerings: configuration.revenueCat.offerings, webhooks: webhookOperations,
                    statistics: Statistics(context: context),
                    appStore: client),
                ChartRoutes(
                    charts: ReadChart(context: context, settings: configuration.analytics),
                    customerMoney: ReadCustomerMoney(context: context, settings: configuration.analytics)),
                WebhookRoutes(webhooks: webhookOperations),
            ],
            auth: auth, telemetry: telemetry, logger: logger)
        let server = HTTPServer(
            configuration: configuration.http, responder: routes.router(), logger: logger, metrics: telemetry.http)
        telemetry.watch(server)
        let sdkServer = sdkServer(
            configuration, context: context, readSubscriber: readSubscriber, addAlias: addAlias, attributes: attributes,
            limiter: limiter,
            verifyPurchase: verifyPurchase,
            signOffer: signOffer,
            verifyPlayPurchase: play.verify, recordAppTransaction: recordAppTransaction, telemetry: telemetry, clock: clock,
            logger: logger)
        return Application(
            configuration: configuration, database: database, migrator: migrator, server: server, sdkServer: sdkServer,
            transport: transport,
            refresher: refresher, catchUp: catchUp, webhooks: webhooks, webhookTransport: webhookTransport,
            documentCache: documentCache, verifyPurchase: verifyPurchase, play: play,
            readSubscriber: readSubscriber, eraseSubscriber: eraseSubscriber, ingestNotification: ingestNotification,
            listings: listings, support: support,
            backfillPrices: BackfillPrices(context: context, serverAPI: serverAPI),
            rollups: KeepRollups(context: context, settings: configuration.analytics),
            appStoreCalls: appleCalls.flatMap { calls in
                serverAPI.map {
                    AppStoreCalls(context: context, serverAPI: $0, doorbell: calls.doorbell)
                }
            },
            massExtensions: massExtensions, background: background,
            logger: logger
        )
    }

    /// Google Play's use cases, and the acknowledgement worker when Google Play is on.
    struct PlayWiring {
        let verify: VerifyPlayPurchase
        let ingest: IngestPlayNotification
        let acknowledgements: AcknowledgePlayPurchases?
        let voided: CatchUpVoidedPurchases
        let api: PlayDeveloperAPI?
    }

    private static func googlePlay(
        _ configuration: ServiceConfiguration, transport: CurlMultiTransport, context: UseCaseContext
    ) throws -> PlayWiring {
        let settings = configuration.googlePlay
        let api =
            settings.isEnabled
            ? settings.serviceAccountKey.map { key in
                PlayDeveloperAPI(
                    key: key, transport: transport, configuration: .init(apiBase: settings.apiURL, timeout: settings.timeout),
                    clock: context.clock, metrics: context.metrics)
            } : nil
        let doorbell = Doorbell()
        let verify = VerifyPlayPurchase(
            context: context, api: api,
            settings: .init(packages: settings.packages, consumeConsumables: settings.consumeConsumables),
            catalog: configuration.catalog, doorbell: doorbell)
        var keys: SigningKeyCache?
        if !settings.jwksFile.isEmpty {
            guard let data = FileManager.default.contents(atPath: settings.jwksFile) else {
                throw ConfigurationError(key: "googlePlay.notifications.jwksFile", message: "cannot read \(settings.jwksFile)")
            }
            do { keys = SigningKeyCache(fixed: try SigningKeys(jwks: Array(data))) } catch {
                throw ConfigurationError(key: "googlePlay.notifications.jwksFile", message: error.description)
            }
        } else {
            keys = SigningKeyCache(url: settings.certsURL, transport: transport, clock: context.clock)
        }
        let audience = settings.notificationAudience
        let ingest = IngestPlayNotification(
            context: context, api: api,
            settings: .init(
                policy: audience.isEmpty ? nil : PushTokenPolicy(audience: audience, email: settings.notificationAccount),
                allowUnauthenticated: settings.allowUnauthenticatedNotifications), keys: keys, packages: settings.packages,
            catalog: configuration.catalog, consumeConsumables: settings.consumeConsumables, doorbell: doorbell)
        let acknowledgements = api.map {
            AcknowledgePlayPurchases(context: context, api: $0, settings: settings.acknowledgements, doorbell: doorbell)
        }
        let voided = CatchUpVoidedPurchases(
            context: context, api: api, settings: settings.voidedPurchases, packages: settings.packages)
        return PlayWiring(verify: verify, ingest: ingest, acknowledgements: acknowledgements, voided: voided, api: api)
    }

    private static func breaker(_ policy: CircuitBreaker.Policy, logger: Logger) -> SharedCircuitBreaker {
        SharedCircuitBreaker(policy: policy) { state in
            switch state {
            case .open(_, let backoff):
                logger.error(
                    "App Store circuit breaker open: receipts fail fast with 503 until a probe succeeds",
                    metadata: ["pause_ms": "\(backoff.components.seconds * 1000)"])
            case .halfOpen: logger.notice("App Store circuit breaker half-open: probing Apple")
            case .closed: logger.notice("App Store circuit breaker closed: Apple answers again")
            }
        }
    }

    /// The configured keys; in development with none configured, two well-known development keys.
    private static func apiAuth(_ configuration: ServiceConfiguration, logger: Logger) -> APIAuth {
        var (publicKeys, secretKeys) = (configuration.api.publicKeys, configuration.api.secretKeys)
        if configuration.environment == "development" && publicKeys.isEmpty && secretKeys.isEmpty {
            (publicKeys, secretKeys) = (["dev-public-key"], ["dev-secret-key"])
            logger.warning("No API keys configured: development keys dev-public-key and dev-secret-key are in use")
        }
        return APIAuth(publicKeys: publicKeys, secretKeys: secretKeys)
    }

    /// The OpenAPI document's bytes, read once; nil (GET /openapi.yaml answers 404) when unreadable.
    static func openAPIDocument(_ path: String, logger: Logger) -> [UInt8]? {
        guard let data = FileManager.default.contents(atPath: path) else {
            logger.warning("OpenAPI document not found: GET /openapi.yaml answers 404", metadata: ["path": "\(path)"])
            return nil
        }
        return Array(data)
    }

    /// The services in start order; the group shuts them down in reverse: the HTTP server drains
    /// first, then the webhook dispatcher lets its attempts end, then the notification catch-up
    /// and the refresher stop, then the rollup keeper, then the curl threads.
    package var services: [any Service] {
        var services: [any Service] = [transport, webhookTransport]
        if configuration.keepRollups { services.append(rollups) }
        services += [refresher, catchUp, voidedPurchases, webhooks] as [any Service]
        if let playAcknowledgements { services.append(playAcknowledgements) }
        if let appStoreCalls { services.append(appStoreCalls) }
        if massExtensions.isEnabled { services.append(massExtensions) }
        return services + [server] + (sdkServer.map { [$0] } ?? [])
    }

    /// Serves until SIGTERM or SIGINT, then shuts down gracefully and returns. `before` are
    /// services to start first and stop last (the built-in App Store simulator).
    package func run(before: [any Service] = []) async throws {
        let group = ServiceGroup(
            configuration: .init(services: (before + services).map { .init(service: $0) }, logger: logger))
        let port = try server.start()
        if let sdkServer {
            let sdkPort = try sdkServer.start()
            logger.info("RevenueCat SDK listener ready", metadata: ["port": "\(sdkPort)"])
        }
        logger.info(
            "receiptd ready",
            metadata: [
                "version": "\(BuildInfo.version)", "environment": "\(configuration.environment)",
                "database": "\(configuration.database.name)", "port": "\(port)",
            ])
        try await withThrowingDiscardingTaskGroup { tasks in
            // The first SIGTERM or SIGINT starts the graceful shutdown (as PID 1 in a container
            // there is no default action to rely on).
            let signals = await UnixSignalsSequence(trapping: .sigterm, .sigint)
            tasks.addTask { [logger] in
                for await signal in signals {
                    logger.info("signal received", metadata: ["signal": "\(signal)"])
                    await group.triggerGracefulShutdown()
                    break
                }
            }
            try await group.run()
            tasks.cancelAll()
        }
    }

    /// Binds and serves without a service group (tests, tools); returns the bound port. Stop with ``stop()``.
    @discardableResult
    package func start() throws -> Int {
        _ = try sdkServer?.start()
        return try server.start()
    }

    /// Stops serving (gracefully, as on SIGTERM) and releases the App Store client.
    package func stop() async {
        server.shutdown()
        sdkServer?.shutdown()
        await server.waitUntilStopped()
        await sdkServer?.waitUntilStopped()
        await background.idle()
        transport.shutdown()
        webhookTransport.shutdown()
    }
}
