import HTTPServer
import Logging

/// The HTTP surface of receiptd, one resource a file (`Resources/`): each ``RouteGroup`` declares
/// its routes with who may call them, reads each request into a use case's input, calls the use
/// cases it holds (and only those) and renders their results. Errors become responses in one
/// place (``API``).
struct Routes: Sendable {
    let groups: [any RouteGroup]
    let auth: APIAuth
    let telemetry: Telemetry
    let logger: Logger

    func router() -> Router {
        var api = API(auth: auth, logger: logger)
        for group in groups { group.add(to: &api) }
        var router = api.router
        router.metrics = telemetry.http
        return router
    }
}

/// A resource's routes, with the use cases they call.
protocol RouteGroup: Sendable {
    func add(to api: inout API)
}
