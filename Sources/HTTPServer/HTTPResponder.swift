/// Per-request facts a handler may need beside the request itself.
public struct RequestContext: Sendable {
    /// The `X-Request-Id` taken from the request when well-formed, else one made here; echoed back.
    public let requestID: String
    /// The peer's address, e.g. `127.0.0.1`.
    public let remoteAddress: String

    public init(requestID: String, remoteAddress: String) {
        self.requestID = requestID
        self.remoteAddress = remoteAddress
    }
}

/// How a request is answered.
public enum HTTPHandler: Sendable {
    /// Answered at once on the event loop: for cheap, non-blocking work only (health, static data).
    case immediate(@Sendable (HTTPRequest, RequestContext) -> HTTPResponse)
    /// Answered on a Swift concurrency task; the loop goes on serving others meanwhile.
    case task(@Sendable (HTTPRequest, RequestContext) async -> HTTPResponse)
    /// Answered on the event loop when `immediate` can (say, from a cache), else on a task.
    case immediateOrTask(
        immediate: @Sendable (HTTPRequest, RequestContext) -> HTTPResponse?,
        task: @Sendable (HTTPRequest, RequestContext) async -> HTTPResponse)
}

/// Chooses the handler for a request. The choice is made on the event loop, so it must be cheap.
public protocol HTTPResponder: Sendable {
    func handler(for request: HTTPRequest) -> HTTPHandler
}
