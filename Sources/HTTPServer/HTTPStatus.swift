/// A response status code with its reason phrase (RFC 9110 §15).
public struct HTTPStatus: Hashable, Sendable, CustomStringConvertible {
    public let code: Int
    public let reason: String

    public init(code: Int, reason: String? = nil) {
        self.code = code
        self.reason = reason ?? HTTPStatus.defaultReason(code)
    }

    public var description: String { "\(code) \(reason)" }

    public static let `continue` = HTTPStatus(code: 100)
    public static let ok = HTTPStatus(code: 200)
    public static let created = HTTPStatus(code: 201)
    public static let accepted = HTTPStatus(code: 202)
    public static let noContent = HTTPStatus(code: 204)
    public static let notModified = HTTPStatus(code: 304)
    public static let badRequest = HTTPStatus(code: 400)
    public static let unauthorized = HTTPStatus(code: 401)
    public static let forbidden = HTTPStatus(code: 403)
    public static let notFound = HTTPStatus(code: 404)
    public static let methodNotAllowed = HTTPStatus(code: 405)
    public static let requestTimeout = HTTPStatus(code: 408)
    public static let conflict = HTTPStatus(code: 409)
    public static let contentTooLarge = HTTPStatus(code: 413)
    public static let uriTooLong = HTTPStatus(code: 414)
    public static let unsupportedMediaType = HTTPStatus(code: 415)
    public static let expectationFailed = HTTPStatus(code: 417)
    public static let unprocessableContent = HTTPStatus(code: 422)
    public static let tooManyRequests = HTTPStatus(code: 429)
    public static let requestHeaderFieldsTooLarge = HTTPStatus(code: 431)
    public static let internalServerError = HTTPStatus(code: 500)
    public static let notImplemented = HTTPStatus(code: 501)
    public static let badGateway = HTTPStatus(code: 502)
    public static let serviceUnavailable = HTTPStatus(code: 503)
    public static let gatewayTimeout = HTTPStatus(code: 504)
    public static let httpVersionNotSupported = HTTPStatus(code: 505)

    static func defaultReason(_ code: Int) -> String {
        switch code {
        case 100: "Continue"
        case 200: "OK"
        case 201: "Created"
        case 202: "Accepted"
        case 204: "No Content"
        case 301: "Moved Permanently"
        case 304: "Not Modified"
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 408: "Request Timeout"
        case 409: "Conflict"
        case 411: "Length Required"
        case 413: "Content Too Large"
        case 414: "URI Too Long"
        case 415: "Unsupported Media Type"
        case 417: "Expectation Failed"
        case 422: "Unprocessable Content"
        case 429: "Too Many Requests"
        case 431: "Request Header Fields Too Large"
        case 500: "Internal Server Error"
        case 501: "Not Implemented"
        case 502: "Bad Gateway"
        case 503: "Service Unavailable"
        case 504: "Gateway Timeout"
        case 505: "HTTP Version Not Supported"
        default: "Status \(code)"
        }
    }
}
