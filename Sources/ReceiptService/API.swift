import HTTPServer
import Logging
import ReceiptCore

/// A ``Router`` whose routes declare who may call them and may throw: the key is checked once,
/// before the handler runs, and every error becomes its response here and nowhere else.
struct API {
    typealias Handler = @Sendable (HTTPRequest, RouteContext) async throws -> HTTPResponse
    typealias ImmediateHandler = @Sendable (HTTPRequest, RouteContext) throws -> HTTPResponse
    typealias TryImmediateHandler = @Sendable (HTTPRequest, RouteContext) throws -> HTTPResponse?

    private(set) var router = Router()
    let auth: APIAuth
    let logger: Logger

    init(auth: APIAuth, logger: Logger) {
        self.auth = auth
        self.logger = logger
    }

    /// A route answered on a concurrency task.
    mutating func on(_ method: HTTPMethod, _ pattern: String, access: Access, _ handler: @escaping Handler) {
        router.on(method, pattern) { [auth, logger] request, context in
            do {
                try auth.require(access, request)
                return try await handler(request, context)
            } catch {
                return Self.response(error, pattern: pattern, context: context, logger: logger)
            }
        }
    }

    /// A route answered on the event loop: cheap, non-blocking work only.
    mutating func immediate(_ method: HTTPMethod, _ pattern: String, access: Access, _ handler: @escaping ImmediateHandler) {
        router.immediate(method, pattern) { [auth, logger] request, context in
            do {
                try auth.require(access, request)
                return try handler(request, context)
            } catch {
                return Self.response(error, pattern: pattern, context: context, logger: logger)
            }
        }
    }

    /// A route answered on the event loop when `immediately` has the answer at hand, else on a task.
    mutating func on(
        _ method: HTTPMethod, _ pattern: String, access: Access, immediately: @escaping TryImmediateHandler,
        handler: @escaping Handler
    ) {
        router.on(
            method, pattern,
            immediately: { [auth, logger] request, context in
                do {
                    try auth.require(access, request)
                    return try immediately(request, context)
                } catch {
                    return Self.response(error, pattern: pattern, context: context, logger: logger)
                }
            },
            handler: { [auth, logger] request, context in
                do {
                    try auth.require(access, request)
                    return try await handler(request, context)
                } catch {
                    return Self.response(error, pattern: pattern, context: context, logger: logger)
                }
            })
    }

    /// The one place an error becomes an answer.
    static func response(_ error: any Error, pattern: String, context: RouteContext, logger: Logger) -> HTTPResponse {
        let refusal = apiError(error)
        if refusal.code == APIError.serverFault.code {
            logger.error(
                "request failed", metadata: ["request_id": "\(context.requestID)", "route": "\(pattern)", "error": "\(error)"])
        }
        return refusal.response(requestID: context.requestID)
    }

    /// `error` as the API states it: its own errors as they are, a use case's through
    /// ``APIError/init(_:explain:)``, anything else an internal error (logged, never answered).
    static func apiError(_ error: any Error) -> APIError {
        switch error {
        case let error as APIError: error
        case let error as ReceiptError: APIError(error)
        default: .serverFault
        }
    }
}
