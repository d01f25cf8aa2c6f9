/// Routes by method and path. Patterns are literal segments and `{name}` parameters, e.g.
/// `/v1/subscribers/{id}`. An unknown path answers 404; a known path with another method answers
/// 405 with `Allow`. `HEAD` is served by the `GET` route, without the body.
public struct Router: HTTPResponder {
    /// A route's handler, given the request and its context (with path parameters).
    public typealias Handler = @Sendable (HTTPRequest, RouteContext) async -> HTTPResponse
    /// A handler answered on the event loop: cheap, non-blocking work only.
    public typealias ImmediateHandler = @Sendable (HTTPRequest, RouteContext) -> HTTPResponse

    private enum Segment: Sendable, Equatable {
        case literal(String)
        case parameter(String)
    }

    /// An event-loop answer when one is at hand (nil: run the route's task handler).
    public typealias TryImmediateHandler = @Sendable (HTTPRequest, RouteContext) -> HTTPResponse?

    private enum Action: Sendable {
        case immediate(ImmediateHandler)
        case task(Handler)
        case immediateOrTask(TryImmediateHandler, Handler)
    }

    private struct Route: Sendable {
        var method: HTTPMethod
        var pattern: String
        var segments: [Segment]
        var action: Action
    }

    private var routes: [Route] = []
    /// Where each answered request is counted and timed, by route pattern; nil: nowhere.
    public var metrics: HTTPMetrics?
    /// How this router's own refusals (400 not a path, 404 no route, 405 another method) are
    /// written, for an API whose clients read another error shape; nil: ``ErrorBody``'s.
    public var refusal: (@Sendable (HTTPStatus, _ code: String, _ message: String, _ requestID: String) -> HTTPResponse)?

    public init() {}

    /// Adds a route answered on a concurrency task.
    public mutating func on(_ method: HTTPMethod, _ pattern: String, handler: @escaping Handler) {
        routes.append(Route(method: method, pattern: pattern, segments: Self.compile(pattern), action: .task(handler)))
    }

    /// Adds a route answered directly on the event loop; for handlers that never block or await.
    public mutating func immediate(_ method: HTTPMethod, _ pattern: String, handler: @escaping ImmediateHandler) {
        routes.append(Route(method: method, pattern: pattern, segments: Self.compile(pattern), action: .immediate(handler)))
    }

    /// Adds a route answered on the event loop when `immediately` has the answer at hand (from
    /// memory, never blocking), else on a concurrency task by `handler`.
    public mutating func on(
        _ method: HTTPMethod, _ pattern: String, immediately: @escaping TryImmediateHandler,
        handler: @escaping Handler
    ) {
        routes.append(
            Route(
                method: method, pattern: pattern, segments: Self.compile(pattern), action: .immediateOrTask(immediately, handler))
        )
    }

    private static func compile(_ pattern: String) -> [Segment] {
        pattern.split(separator: "/", omittingEmptySubsequences: true).map { part in
            if part.hasPrefix("{") && part.hasSuffix("}") {
                return .parameter(String(part.dropFirst().dropLast()))
            }
            return .literal(String(part))
        }
    }

    /// Matches `path` against a route's segments; the decoded parameters on success.
    private static func match(_ segments: [Segment], _ parts: [Substring]) -> [String: String]? {
        guard segments.count == parts.count else { return nil }
        var parameters: [String: String] = [:]
        for (segment, part) in zip(segments, parts) {
            switch segment {
            case .literal(let literal):
                guard part.utf8.elementsEqual(literal.utf8) else { return nil }  // bytes, as every parser reads a path
            case .parameter(let name):
                guard let value = PercentDecoding.decode(part), !value.isEmpty else { return nil }
                parameters[name] = value
            }
        }
        return parameters
    }

    public func handler(for request: HTTPRequest) -> HTTPHandler {
        let path = request.path
        guard path.first == "/" else {
            metrics?.record(method: request.method.rawValue, route: "unmatched", status: 400, nanoseconds: 0)
            return error(.badRequest, "invalid_target", "The request target must be a path.")
        }
        let parts = path.split(byte: UInt8(ascii: "/"), omittingEmpty: true)
        var allowed: [HTTPMethod] = []
        for route in routes {
            guard let parameters = Self.match(route.segments, parts) else { continue }
            let servesHead = request.method == .head && route.method == .get
            guard route.method == request.method || servesHead else {
                allowed.append(route.method)
                if route.method == .get { allowed.append(.head) }
                continue
            }
            let (metrics, pattern, method) = (metrics, route.pattern, request.method.rawValue)
            let started = Syscall.monotonicNanoseconds()
            @Sendable func counted(_ response: HTTPResponse) -> HTTPResponse {
                metrics?.record(
                    method: method, route: pattern, status: response.status.code,
                    nanoseconds: Syscall.monotonicNanoseconds() - started)
                return response
            }
            switch route.action {
            case .immediate(let handle):
                return .immediate { request, context in
                    counted(handle(request, RouteContext(request: context, parameters: parameters)))
                }
            case .task(let handle):
                return .task { request, context in
                    counted(await handle(request, RouteContext(request: context, parameters: parameters)))
                }
            case .immediateOrTask(let immediately, let handle):
                return .immediateOrTask(
                    immediate: { request, context in
                        immediately(request, RouteContext(request: context, parameters: parameters)).map(counted)
                    },
                    task: { request, context in
                        counted(await handle(request, RouteContext(request: context, parameters: parameters)))
                    })
            }
        }
        if allowed.isEmpty {
            metrics?.record(method: request.method.rawValue, route: "unmatched", status: 404, nanoseconds: 0)
            return error(.notFound, "not_found", "No route for this path.")
        }
        var unique: [String] = []
        for method in allowed where !unique.contains(method.rawValue) { unique.append(method.rawValue) }
        let allow = unique.joined(separator: ", ")
        metrics?.record(method: request.method.rawValue, route: "unmatched", status: 405, nanoseconds: 0)
        let refusal = refusal
        return .immediate { _, context in
            let message = "This path does not accept this method."
            guard let refusal else {
                return ErrorBody.response(
                    status: .methodNotAllowed, code: "method_not_allowed", message: message, requestID: context.requestID,
                    headers: ["Allow": allow])
            }
            var response = refusal(.methodNotAllowed, "method_not_allowed", message, context.requestID)
            response.headers.add(name: "Allow", value: allow)
            return response
        }
    }

    private func error(_ status: HTTPStatus, _ code: String, _ message: String) -> HTTPHandler {
        let refusal = refusal
        return .immediate { _, context in
            refusal?(status, code, message, context.requestID)
                ?? ErrorBody.response(status: status, code: code, message: message, requestID: context.requestID)
        }
    }
}

/// A handler's view of its request: the server's context plus the route's path parameters.
public struct RouteContext: Sendable {
    public let request: RequestContext
    /// Decoded `{name}` parameters of the matched pattern.
    public let parameters: [String: String]

    public var requestID: String { request.requestID }
}
