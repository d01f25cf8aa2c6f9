import HTTPServer
import Logging
import RevenueCatProtocol

/// The second listener, for RevenueCat's client SDKs pointed at receiptd with `proxyURL`
/// (Docs/revenuecat-sdk.md): their `/v1` protocol at its own port's root (the SDKs drop any path
/// of the proxy URL), over the same use cases, storage and state as receiptd's own API.
struct SDKListener: Sendable {
    let groups: [any SDKRouteGroup]
    let keys: SDKKeys
    let clock: @Sendable () -> Int64
    let logger: Logger

    func router() -> Router {
        var api = SDKAPI(keys: keys, clock: clock, logger: logger)
        for group in groups { group.add(to: &api) }
        return api.router
    }
}

/// A resource of the SDKs' protocol, with the use cases its routes call.
protocol SDKRouteGroup: Sendable {
    func add(to api: inout SDKAPI)
}
