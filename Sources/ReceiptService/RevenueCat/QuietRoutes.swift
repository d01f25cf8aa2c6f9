import HTTPServer
import JSON
import RevenueCatProtocol

/// What the SDKs call beside their core flows, answered so they stay quiet
/// (../shared/reference/revenuecat-sdk-protocol.md §9): remote config refused with a 4xx (the SDK
/// then turns it off for the session instead of retrying), events and diagnostics taken and
/// dropped (receiptd keeps no paywall or diagnostics events), health answered.
struct QuietRoutes: SDKRouteGroup {
    func add(to api: inout SDKAPI) {
        api.on(.post, "/v1/config/{domain}") { _, _, _ in throw SDKError.notServed }
        for path in ["/v1/events", "/v1/diagnostics"] {
            api.on(.post, path) { _, _, _ in .json(.object([:])) }
        }
        api.on(.get, "/v1/health", keyed: false) { _, _, _ in .json(.object([:])) }
    }
}
