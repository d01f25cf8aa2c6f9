import FoundationEssentials
import Glibc
import HTTPServer

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

/// The JSON route the Hummingbird peer also serves, so the two stacks can be compared.
enum BenchRoutes {
    struct EchoRequest: Codable, Sendable {
        var user_id: String
        var product_id: String
        var receipt_data: String
    }

    struct EchoResponse: Codable, Sendable {
        var received_bytes: Int
        var echo: EchoRequest
    }

    static func router() -> Router {
        var router = Router()
        router.immediate(.get, "/healthz") { _, _ in .json(["status": "ok"]) }
        router.on(.post, "/echo") { request, context in
            do throws(JSONBodyError) {
                let body: EchoRequest = try request.decodeJSON()
                return .json(EchoResponse(received_bytes: request.body.count, echo: body))
            } catch {
                return error.response(requestID: context.requestID)
            }
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
