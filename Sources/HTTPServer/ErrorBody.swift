import FoundationEssentials

/// The JSON error body every error response carries:
/// `{"error": {"code", "message", "request_id", "apple_status"?}}`. `code` is stable and
/// machine-readable; `message` is for people and never echoes secrets or request bytes.
public struct ErrorBody: Codable, Sendable, Equatable {
    public var error: Detail

    public struct Detail: Codable, Sendable, Equatable {
        public var code: String
        public var message: String
        public var requestID: String?
        /// The `status` Apple answered, when the error comes from Apple's answer.
        public var appleStatus: Int?

        enum CodingKeys: String, CodingKey {
            case code, message
            case requestID = "request_id"
            case appleStatus = "apple_status"
        }
    }

    public init(code: String, message: String, requestID: String?, appleStatus: Int? = nil) {
        error = Detail(code: code, message: message, requestID: requestID, appleStatus: appleStatus)
    }

    /// A response with the JSON error body.
    public static func response(
        status: HTTPStatus, code: String, message: String, requestID: String?, appleStatus: Int? = nil,
        headers: HTTPHeaders = [:]
    ) -> HTTPResponse {
        var response = HTTPResponse.json(
            ErrorBody(code: code, message: message, requestID: requestID, appleStatus: appleStatus), status: status)
        for field in headers { response.headers.replaceOrAdd(name: field.name, value: field.value) }
        return response
    }
}
