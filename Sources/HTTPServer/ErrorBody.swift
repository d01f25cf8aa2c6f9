public import JSON

/// The JSON error body every error response carries: `{"error": {"code", "message", "request_id"}}`.
/// `code` is stable and machine-readable; `message` is for people and never echoes secrets or
/// request bytes. An application adds its own members (``response(status:code:message:requestID:detail:members:headers:)``).
public enum ErrorBody {
    /// The `error` object's members HTTP knows of.
    public static func detail(code: String, message: String, requestID: String?) -> [Identifier: JSONValue] {
        var detail: [Identifier: JSONValue] = ["code": .string(code), "message": .string(message)]
        if let requestID { detail["request_id"] = .string(requestID) }
        return detail
    }

    /// A response with the JSON error body; `detail` adds members to the `error` object, `members`
    /// adds top-level members beside it.
    public static func response(
        status: HTTPStatus, code: String, message: String, requestID: String?, detail extra: [Identifier: JSONValue] = [:],
        members: [Identifier: JSONValue] = [:], headers: HTTPHeaders = [:]
    ) -> HTTPResponse {
        let error = detail(code: code, message: message, requestID: requestID).merging(extra) { $1 }
        var body = members
        body["error"] = .object(error)
        return .json(.object(body), status: status, headers: headers)
    }
}

extension HTTPResponse {
    /// `value` as a JSON body (canonical bytes: sorted members) with `Content-Type: application/json`.
    public static func json(_ value: JSONValue, status: HTTPStatus = .ok, headers: HTTPHeaders = [:]) -> HTTPResponse {
        json(bytes: value.jsonBytes, status: status, headers: headers)
    }

    /// JSON already written (by `JSONValue`'s writers) as the body, with `Content-Type: application/json`.
    public static func json(bytes: [UInt8], status: HTTPStatus = .ok, headers: HTTPHeaders = [:]) -> HTTPResponse {
        var h = headers
        h.replaceOrAdd(name: "Content-Type", value: "application/json")
        return HTTPResponse(status: status, headers: h, body: bytes)
    }
}
