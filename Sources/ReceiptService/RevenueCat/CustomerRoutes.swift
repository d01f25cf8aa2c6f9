import HTTPServer
import JSON
import ReceiptCore
import RevenueCatProtocol

/// A customer as the SDKs see one: their CustomerInfo (`GET /v1/subscribers/{id}`, on configure,
/// foreground and logOut) and logIn (`POST /v1/subscribers/identify`).
struct CustomerRoutes: SDKRouteGroup {
    let readSubscriber: ReadSubscriber
    let addAlias: AddAlias

    func add(to api: inout SDKAPI) {
        // Anybody's, as at RevenueCat: the answer names no store identifier (CustomerInfo).
        // On the event loop when the document cache holds the person's CustomerInfo beside their
        // document (kept with it, gone with it), as receiptd's own GET.
        api.on(
            .get, "/v1/subscribers/{app_user_id}",
            immediately: { [readSubscriber] request, context, caller in
                let user = try SDKRequests.appUserID(context.parameters["app_user_id"])
                guard let kept = readSubscriber.cached(user)?.entry.companion as? KeptCustomerInfo else { return nil }
                return SDKResponses.tagged(
                    CustomerInfo.body(subscriber: kept.subscriber, now: caller.now), tag: kept.tag, request: request)
            },
            handler: { [readSubscriber] request, context, caller in
                let user = try SDKRequests.appUserID(context.parameters["app_user_id"])
                let customer = try await readSubscriber.customer(user)
                // Kept with the reading the document cache now holds, if it is this one.
                let keep = readSubscriber.cached(user).flatMap { entry, _ -> (@Sendable (KeptCustomerInfo) -> Void)? in
                    guard entry.version == customer.snapshot?.version else { return nil }
                    let sequence = entry.sequence
                    return { readSubscriber.keep($0, for: user, sequence: sequence, version: entry.version) }
                }
                return SDKResponses.customerInfo(customer, of: user, caller: caller, request: request, keep: keep)
            })
        // logIn: from the id the app had to the one it now knows. An anonymous id (the SDK's
        // `$RCAnonymousID:` and 32 hex digits, which only that device knows) becomes an alias of
        // the new one, its purchases with it; any other id is never merged by an app's key (anyone
        // can type it): the SDK switches to the new id, and the two stay apart.
        api.on(.post, "/v1/subscribers/identify") { [readSubscriber, addAlias] request, _, caller in
            let body = try SDKRequests.object(request.body)
            let current = try SDKRequests.appUserID(body["app_user_id"]?.string)
            let new = try SDKRequests.appUserID(body["new_app_user_id"]?.string)
            let existed = try await readSubscriber.customer(new).snapshot != nil
            try await Self.logIn(from: current, to: new, addAlias)
            return SDKResponses.customerInfo(
                try await readSubscriber.customer(new), of: new, caller: caller, request: request,
                status: existed ? .ok : .created)
        }
        // Android's older createAlias (`POST /v1/subscribers/{id}/alias`, `{"new_app_user_id"}`):
        // logIn's rule, answered with an empty object (the SDK reads only the status).
        api.on(.post, "/v1/subscribers/{app_user_id}/alias") { [addAlias] request, context, _ in
            let current = try SDKRequests.appUserID(context.parameters["app_user_id"])
            let new = try SDKRequests.appUserID(try SDKRequests.object(request.body)["new_app_user_id"]?.string)
            try await Self.logIn(from: current, to: new, addAlias)
            return .json(.object([:]))
        }
    }

    /// `current` becomes an alias of `new` when it is an anonymous id (only its device knows it);
    /// any other id, which anyone can type, is never merged by an app's key.
    static func logIn(from current: String, to new: String, _ addAlias: AddAlias) async throws {
        guard SDKRequests.isAnonymous(current), !current.isExactly(new) else { return }
        do {
            _ = try await addAlias(new, alias: current)
        } catch .aliasTaken {
            // Already another person's alias: logIn switches, nothing moves.
        }
    }
}
