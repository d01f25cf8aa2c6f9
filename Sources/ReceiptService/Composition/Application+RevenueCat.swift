import Clocks
import CustomerOffers
import HTTPServer
import Logging
import ReceiptCore

extension Application {
    /// The listener for RevenueCat's SDKs (``SDKListener``) when `revenueCat.port` is set: on the
    /// HTTP server's address and settings, at its own port. In development with no keys
    /// configured, two well-known development keys (`appl_dev`, `goog_dev`).
    static func sdkServer(
        _ configuration: ServiceConfiguration, context: UseCaseContext, readSubscriber: ReadSubscriber, addAlias: AddAlias,
        attributes: CustomerAttributes, limiter: RateLimiter,
        verifyPurchase: VerifyPurchase, signOffer: SignOffer, verifyPlayPurchase: VerifyPlayPurchase,
        recordAppTransaction: RecordAppTransaction,
        telemetry: Telemetry, clock: WallClock, logger: Logger
    ) -> HTTPServer? {
        let settings = configuration.revenueCat
        guard let port = settings.port else { return nil }
        var keys = settings.keys
        if configuration.environment == "development" && keys.isEmpty {
            keys = ["appl_dev", "goog_dev"]
            logger.warning("No RevenueCat SDK keys configured: development keys appl_dev and goog_dev are in use")
        }
        let listener = SDKListener(
            groups: [
                CustomerRoutes(readSubscriber: readSubscriber, addAlias: addAlias),
                ReceiptRoutes(
                    verifyPurchase: verifyPurchase, verifyPlayPurchase: verifyPlayPurchase,
                    recordAppTransaction: recordAppTransaction, readSubscriber: readSubscriber, customerAttributes: attributes,
                    catalog: configuration.catalog, receiptdConsumes: configuration.googlePlay.consumeConsumables,
                    limiter: limiter),
                OfferingRoutes(offerings: settings.offerings, rules: configuration.entitlementSettings.rules),
                AttributeRoutes(customerAttributes: attributes, limiter: RateLimiter(configuration.limits)),
                PromotionalOfferRoutes(signOffer: signOffer),
                QuietRoutes(),
            ],
            keys: SDKKeys(keys), clock: { clock.now() }, logger: logger)
        var http = configuration.http
        http.port = port
        var router = listener.router()
        router.metrics = telemetry.http
        return HTTPServer(configuration: http, responder: router, logger: logger, metrics: telemetry.http)
    }
}
