import Entitlements
import HTTPServer
import JSON
import ReceiptCore
import RevenueCatProtocol

/// What the app sells (`GET /v1/subscribers/{id}/offerings`, Config/offerings.json) and what each
/// product grants (`GET /v1/product_entitlement_mapping`, for the SDKs' offline entitlements
/// while receiptd answers 5xx), each for the key's store.
struct OfferingRoutes: SDKRouteGroup {
    let offerings: Offerings
    let rules: EntitlementRules

    func add(to api: inout SDKAPI) {
        // Rendered and tagged once per store: the configuration does not change while receiptd runs.
        typealias Rendered = (body: [UInt8], tag: String)
        func rendered(_ json: JSONValue) -> Rendered {
            let body = json.jsonBytes
            return (body, SubscriberDocument.fnv1a64([body]))
        }
        var bodies: [Offerings.Platform: (offerings: Rendered, mapping: Rendered)] = [:]
        for platform in Offerings.Platform.allCases {
            bodies[platform] = (
                rendered(offerings.json(for: platform)), rendered(offerings.entitlementMapping(rules, for: platform))
            )
        }
        let answers = bodies
        api.on(.get, "/v1/subscribers/{app_user_id}/offerings") { request, context, caller in
            _ = try SDKRequests.appUserID(context.parameters["app_user_id"])
            let answer = answers[caller.platform]!.offerings
            return SDKResponses.tagged(answer.body, tag: answer.tag, request: request)
        }
        api.on(.get, "/v1/product_entitlement_mapping") { request, _, caller in
            let answer = answers[caller.platform]!.mapping
            return SDKResponses.tagged(answer.body, tag: answer.tag, request: request)
        }
    }
}
