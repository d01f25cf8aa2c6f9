import HTTPServer
import JSON
import ReceiptCore
import RevenueCatProtocol

/// What an app says of its user (`POST /v1/subscribers/{id}/attributes`): each attribute taken or
/// refused on its own; the refused ones come back as `attribute_errors` (7263), which the SDKs
/// log, and they send the taken ones no more.
struct AttributeRoutes: SDKRouteGroup {
    let customerAttributes: CustomerAttributes
    /// `limits.*` again, a budget of its own: the SDKs post attributes on every sync, which must not
    /// hold purchases up. Past it, 503 with `Retry-After` (the SDKs keep attributes answered 5xx
    /// to send them again; any other 4xx but 404 marks them synced).
    let limiter: RateLimiter

    func add(to api: inout SDKAPI) {
        api.on(.post, "/v1/subscribers/{app_user_id}/attributes") { [customerAttributes, limiter] request, context, caller in
            let key = APIAuth.bearerKey(request).map { String(decoding: $0, as: UTF8.self) } ?? ""
            if let wait = limiter.check(key: key, address: context.request.remoteAddress, now: caller.now) {
                throw SDKError.slowDown(retryAfterSeconds: wait)
            }
            let user = try SDKRequests.appUserID(context.parameters["app_user_id"])
            let refused = try await Self.set(try SDKRequests.object(request.body), for: user, customerAttributes)
            guard refused.isEmpty else { throw SDKError.invalidAttributes(refused) }
            return .json(.object([:]))
        }
    }

    /// Stores what `body`'s `attributes` holds for `user`; the attributes refused.
    static func set(_ body: JSONValue, for user: String, _ customerAttributes: CustomerAttributes) async throws
        -> [SDKError.AttributeError]
    {
        let (taken, refused) = try Attributes.read(body)
        try await customerAttributes.set(user, taken.map { .init(name: $0.name, value: $0.value, updatedAt: $0.updatedAt) })
        return refused
    }
}
