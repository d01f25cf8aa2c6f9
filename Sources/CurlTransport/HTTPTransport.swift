/// One outbound HTTP request (to Apple, Google, a webhook endpoint): what `HTTPTransport` sends.
package struct OutboundRequest: Sendable, Equatable {
    package enum Method: String, Sendable {
        case get = "GET"
        case post = "POST"
        case put = "PUT"
    }

    package var method: Method
    package var url: String
    /// `Name: value` lines beside the transport's own (`Accept: application/json`, and
    /// `Content-Type` when there is a body). May hold a bearer token: never logged.
    package var headers: [String]
    /// A body, or nil for none.
    package var body: [UInt8]?
    /// The body's media type (`Content-Type`).
    package var contentType: String
    /// The whole exchange ends within this.
    package var timeout: Duration

    package init(
        method: Method, url: String, headers: [String] = [], body: [UInt8]? = nil, contentType: String = "application/json",
        timeout: Duration
    ) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.contentType = contentType
        self.timeout = timeout
    }
}

/// One HTTP exchange's result, as the store clients need it.
package enum TransportResult: Sendable, Equatable {
    /// An HTTP response: its status, its body, and its `Retry-After` header when it has one.
    case response(status: Int, body: [UInt8], retryAfter: String? = nil)
    /// No usable response: connect or TLS failure, timeout, reset, or a body over the cap.
    case failure(String)
}

/// Sends a request and returns what came back. `CurlMultiTransport` is the real one.
package protocol HTTPTransport: Sendable {
    func send(_ request: OutboundRequest) async -> TransportResult
}

extension HTTPTransport {
    /// A JSON POST (verifyReceipt's one kind of request).
    package func post(url: String, json body: [UInt8], timeout: Duration) async -> TransportResult {
        await send(OutboundRequest(method: .post, url: url, body: body, timeout: timeout))
    }
}
