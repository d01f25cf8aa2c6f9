/// Why a request could not be parsed: the status to answer with and a stable machine-readable code.
/// After any of these the connection is closed (RFC 9112 §2.2: framing can no longer be trusted).
public struct HTTPParseError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The response status (400, 413, 414, 417, 431, 505).
    public let status: HTTPStatus
    /// A stable code for the JSON error body and for metrics, e.g. `header_too_large`.
    public let code: String
    /// A human sentence; never echoes request bytes.
    public let message: String

    public var description: String { "\(status.code) \(code): \(message)" }

    static func malformed(_ message: String) -> HTTPParseError {
        HTTPParseError(status: .badRequest, code: "malformed_request", message: message)
    }
    static func badFraming(_ message: String) -> HTTPParseError {
        HTTPParseError(status: .badRequest, code: "invalid_framing", message: message)
    }
    static let requestLineTooLong = HTTPParseError(
        status: .uriTooLong, code: "request_line_too_long", message: "The request line exceeds the configured limit.")
    static let headerTooLarge = HTTPParseError(
        status: .requestHeaderFieldsTooLarge, code: "header_too_large",
        message: "The header section exceeds the configured size.")
    static let tooManyHeaders = HTTPParseError(
        status: .requestHeaderFieldsTooLarge, code: "too_many_headers",
        message: "The request has more header fields than the configured limit.")
    static let bodyTooLarge = HTTPParseError(
        status: .contentTooLarge, code: "payload_too_large", message: "The request body exceeds the configured limit.")
    static let versionNotSupported = HTTPParseError(
        status: .httpVersionNotSupported, code: "http_version_not_supported",
        message: "Only HTTP/1.0 and HTTP/1.1 are served.")
    static let methodNotImplemented = HTTPParseError(
        status: .notImplemented, code: "method_not_implemented",
        message: "The method is not one this server implements.")
    static let expectationFailed = HTTPParseError(
        status: .expectationFailed, code: "expectation_failed", message: "Only `Expect: 100-continue` is supported.")
}
