import FoundationEssentials

extension HTTPResponse {
    /// Encodes `value` as a JSON body with `Content-Type: application/json`. Keys are sorted so
    /// bodies are byte-stable. An encoding failure is a programming error and answers 500.
    public static func json<T: Encodable>(_ value: T, status: HTTPStatus = .ok, headers: HTTPHeaders = [:]) -> HTTPResponse {
        var h = headers
        h.replaceOrAdd(name: "Content-Type", value: "application/json")
        do {
            return HTTPResponse(status: status, headers: h, body: Array(try JSONCoding.encoder.encode(value)))
        } catch {
            return HTTPResponse(
                status: .internalServerError, headers: h,
                body: Array(#"{"error":{"code":"internal_error","message":"The response could not be encoded."}}"#.utf8))
        }
    }
}

/// Why a JSON request body was refused; maps to one HTTP status and a stable code.
public struct JSONBodyError: Error, Sendable, Equatable {
    public let status: HTTPStatus
    public let code: String
    public let message: String

    /// The error as a response, carrying the request id.
    public func response(requestID: String) -> HTTPResponse {
        ErrorBody.response(status: status, code: code, message: message, requestID: requestID)
    }
}

extension HTTPRequest {
    /// Decodes the body as JSON. Requires a JSON `Content-Type` (415 otherwise) and a body that
    /// decodes as `T` (400 `invalid_json` otherwise, naming the first offending field).
    public func decodeJSON<T: Decodable>(_ type: T.Type = T.self) throws(JSONBodyError) -> T {
        guard let contentType = headers[first: "Content-Type"],
            contentType.split(separator: ";").first.map({
                HTTPHeaders.namesEqual($0.trimmingASCIIWhitespace(), "application/json")
            }) == true
        else {
            throw JSONBodyError(
                status: .unsupportedMediaType, code: "unsupported_media_type",
                message: "The body must be sent as application/json.")
        }
        do {
            return try JSONCoding.decoder.decode(T.self, from: Data(body))
        } catch let DecodingError.keyNotFound(key, context) {
            throw JSONBodyError(
                status: .badRequest, code: "invalid_json",
                message: "Missing field `\(JSONCoding.path(context.codingPath + [key]))`.")
        } catch let DecodingError.typeMismatch(_, context), let DecodingError.valueNotFound(_, context) {
            throw JSONBodyError(
                status: .badRequest, code: "invalid_json",
                message: "Field `\(JSONCoding.path(context.codingPath))` has the wrong type.")
        } catch let DecodingError.dataCorrupted(context) where !context.codingPath.isEmpty {
            throw JSONBodyError(
                status: .badRequest, code: "invalid_json",
                message: "Field `\(JSONCoding.path(context.codingPath))` is invalid.")
        } catch {
            throw JSONBodyError(status: .badRequest, code: "invalid_json", message: "The body is not valid JSON.")
        }
    }
}

/// Shared coders. JSONEncoder and JSONDecoder are safe to share across threads.
enum JSONCoding {
    static let encoder: JSONEncoder = {
        let e = JSONEncoder()
        e.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return e
    }()
    static let decoder = JSONDecoder()

    static func path(_ keys: [any CodingKey]) -> String {
        keys.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }.joined(separator: ".")
    }
}
