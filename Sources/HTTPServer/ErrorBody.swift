import FoundationEssentials

/// The JSON error body every error response carries: `{"code", "message", "request_id"}`.
/// `code` is stable and machine-readable; `message` is for people and never echoes secrets.
public struct ErrorBody: Codable, Sendable, Equatable {
    public var code: String
    public var message: String
    public var requestID: String?

    enum CodingKeys: String, CodingKey {
        case code, message
        case requestID = "request_id"
    }

    public init(code: String, message: String, requestID: String?) {
        self.code = code
        self.message = message
        self.requestID = requestID
    }

    /// A response with the JSON error body.
    public static func response(
        status: HTTPStatus, code: String, message: String, requestID: String?, headers: HTTPHeaders = [:]
    ) -> HTTPResponse {
        var response = HTTPResponse.json(ErrorBody(code: code, message: message, requestID: requestID), status: status)
        for field in headers { response.headers.replaceOrAdd(name: field.name, value: field.value) }
        return response
    }
}
