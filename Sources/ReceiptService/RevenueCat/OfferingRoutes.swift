import Entitlements
import HTTPServer
import JSON
import RevenueCatProtocol

/// What the app sells (`GET /v1/subscribers/{id}/offerings`, Config/offerings.json) and what each
/// product grants (`GET /v1/product_entitlement_mapping`, for the SDKs' offline entitlements
/// while receiptd answers 5xx), each for the key's store.
struct OfferingRoutes: SDKRouteGroup {
    let offerings: Offerings
    let rules: EntitlementRules

    func add(to api: inout SDKAPI) {
        // Rendered once per store: the configuration does not change while receiptd runs.
        var bodies: [Offerings.Platform: (offerings: [UInt8], mapping: [UInt8])] = [:]
        for platform in Offerings.Platform.allCases {
            bodies[platform] = (
                offerings.json(for: platform).jsonBytes, offerings.entitlementMapping(rules, for: platform).jsonBytes
            )
        }
        let rendered = bodies
        api.on(.get, "/v1/subscribers/{app_user_id}/offerings") { request, context, caller in
            _ = try SDKRequests.appUserID(context.parameters["app_user_id"])
            return SDKResponses.tagged(rendered[caller.platform]!.offerings, request: request)
        }
        api.on(.get, "/v1/product_entitlement_mapping") { request, _, caller in
            SDKResponses.tagged(rendered[caller.platform]!.mapping, request: request)
        }
    }
}
