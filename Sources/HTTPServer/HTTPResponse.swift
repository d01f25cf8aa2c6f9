/// A response to write. `Content-Length` (or `Transfer-Encoding`), `Connection` and `Date` are
/// set by the server.
public struct HTTPResponse: Sendable {
    public var status: HTTPStatus
    public var headers: HTTPHeaders
    public var body: [UInt8]
    /// A body written as it is produced instead of `body` (chunked; close-delimited to HTTP/1.0):
    /// the server asks for the next part only once the previous one has left, so a slow reader
    /// holds at most one part in memory. A part thrown instead of returned cuts the connection,
    /// so the client sees an incomplete body, never a complete-looking one.
    public var stream: HTTPBodyStream?

    public init(status: HTTPStatus = .ok, headers: HTTPHeaders = [:], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// A streamed response (``stream``).
    public init(status: HTTPStatus = .ok, headers: HTTPHeaders = [:], stream: HTTPBodyStream) {
        self.status = status
        self.headers = headers
        self.body = []
        self.stream = stream
    }

    /// A plain-text response.
    public static func text(_ text: String, status: HTTPStatus = .ok) -> HTTPResponse {
        HTTPResponse(status: status, headers: ["Content-Type": "text/plain; charset=utf-8"], body: Array(text.utf8))
    }
}

/// A body produced part by part: `next()` gives the next bytes, nil at the end. Called by one
/// task, one call at a time.
public struct HTTPBodyStream: Sendable {
    public let next: @Sendable () async throws -> [UInt8]?

    public init(next: @escaping @Sendable () async throws -> [UInt8]?) { self.next = next }
}
