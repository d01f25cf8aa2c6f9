/// One HTTP exchange's result, as the verification logic needs it.
public enum TransportResult: Sendable, Equatable {
    /// An HTTP response: its status and body.
    case response(status: Int, body: [UInt8])
    /// No usable response: connect or TLS failure, timeout, reset, or a body over the cap.
    case failure(String)
}

/// Sends a JSON POST and returns what came back. `CurlMultiTransport` is the real one.
public protocol HTTPTransport: Sendable {
    func post(url: String, json body: [UInt8], timeout: Duration) async -> TransportResult
}
