import FoundationEssentials
import Glibc
import HTTPServer
import JSON

/// Any request → 200 with its body.
struct EchoResponder: HTTPResponder {
    func handler(for request: HTTPRequest) -> HTTPHandler {
        .immediate { request, _ in
            HTTPResponse(status: .ok, headers: ["Content-Type": "application/octet-stream"], body: request.body)
        }
    }
}

/// Any request → 200 with a JSON account of it, every value base64.
struct InspectResponder: HTTPResponder {
    func handler(for request: HTTPRequest) -> HTTPHandler {
        .immediate { request, _ in
            HTTPResponse(status: .ok, headers: ["Content-Type": "application/json"], body: Self.describe(request))
        }
    }

    /// `{"method","uri","version","headers":[[name,value],…],"body"}`; base64 needs no JSON escaping.
    static func describe(_ request: HTTPRequest) -> [UInt8] {
        func b64<S: Sequence<UInt8>>(_ bytes: S) -> String { "\"" + Data(bytes).base64EncodedString() + "\"" }
        let headers = request.headers.map { "[\(b64($0.name.utf8)),\(b64($0.value.utf8))]" }.joined(separator: ",")
        let json =
            "{\"method\":\(b64(request.method.rawValue.utf8)),\"uri\":\(b64(request.target.utf8)),"
            + "\"version\":\(b64(request.version.description.utf8)),\"headers\":[\(headers)],\"body\":\(b64(request.body))}"
        return Array(json.utf8)
    }
}

/// The JSON route the Hummingbird peer also serves, so the two stacks can be compared:
/// `{"user_id", "product_id", "receipt_data"}` (strings) → `{"received_bytes", "echo"}`.
enum BenchRoutes {
    static let fields: [Identifier] = ["user_id", "product_id", "receipt_data"]

    static func router() -> Router {
        var router = Router()
        router.immediate(.get, "/healthz") { _, _ in .json(.object(["status": .string("ok")])) }
        router.on(.post, "/echo") { request, context in
            guard request.headers.hasMediaType("application/json") else {
                return ErrorBody.response(
                    status: .unsupportedMediaType, code: "unsupported_media_type",
                    message: "The body must be sent as application/json.", requestID: context.requestID)
            }
            var echo: [Identifier: JSONValue] = [:]
            let body = try? JSONValue.parse(request.body)
            for field in fields {
                guard case .string(let value)? = body?[field.string] else {
                    return ErrorBody.response(
                        status: .badRequest, code: "invalid_json", message: "Field `\(field.string)` must be a string.",
                        requestID: context.requestID)
                }
                echo[field] = .string(value)
            }
            return .json(.object(["received_bytes": .int(request.body.count), "echo": .object(echo)]))
        }
        return router
    }
}

/// The process environment, read without Foundation's ProcessInfo.
enum Environment {
    static var variables: [String: String] {
        var result: [String: String] = [:]
        var pointer = environ
        while let entry = pointer.pointee {
            let text = String(cString: entry)
            if let eq = text.firstIndex(of: "=") {
                result[String(text[..<eq])] = String(text[text.index(after: eq)...])
            }
            pointer += 1
        }
        return result
    }
}

/// Writes `text` to standard error.
func printError(_ text: String) {
    let bytes = Array(text.utf8)
    _ = bytes.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
}
