// http-echo: our HTTP server with one JSON route, for benchmarks beside the peers in
// ../shared/bench (never part of `receiptd serve`).
//
//   POST /echo   decode {user_id, product_id, receipt_data}, answer {received_bytes, echo}
//   GET  /healthz
//
// The same work the Hummingbird peer does for POST /echo, so the two can be compared.
// PORT (default 18082) and EVENT_LOOPS (default: cores) come from the environment.
import Dispatch
import Glibc
import HTTPServer
import Logging

struct EchoRequest: Codable, Sendable {
    var user_id: String
    var product_id: String
    var receipt_data: String
}

struct EchoResponse: Codable, Sendable {
    var received_bytes: Int
    var echo: EchoRequest
}

var logger = Logger(label: "http-echo")
logger.logLevel = .warning
let environment = ProcessInfo.environment
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
let configuration = HTTPServerConfiguration(
    host: "127.0.0.1", port: Int(environment["PORT"] ?? "") ?? 18082,
    eventLoops: Int(environment["EVENT_LOOPS"] ?? "") ?? HTTPServerConfiguration.coreCount, accessLog: false)
let server = HTTPServer(configuration: configuration, responder: router, logger: logger)
signal(SIGTERM, SIG_IGN)
let term = DispatchSource.makeSignalSource(signal: SIGTERM, queue: .global())
term.setEventHandler { @Sendable in server.shutdown() }
term.resume()
try server.start()
await server.waitUntilStopped()

/// The process environment without Foundation.
enum ProcessInfo {
    static var environment: [String: String] {
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
