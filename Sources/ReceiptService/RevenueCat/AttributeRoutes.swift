import HTTPServer
import JSON
import ReceiptCore
import RevenueCatProtocol

/// What an app says of its user (`POST /v1/subscribers/{id}/attributes`): each attribute taken or
/// refused on its own; the refused ones come back as `attribute_errors` (7263), which the SDKs
/// log, and they send the taken ones no more.
struct AttributeRoutes: SDKRouteGroup {
    let customerAttributes: CustomerAttributes

    func add(to api: inout SDKAPI) {
        api.on(.post, "/v1/subscribers/{app_user_id}/attributes") { [customerAttributes] request, context, _ in
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
