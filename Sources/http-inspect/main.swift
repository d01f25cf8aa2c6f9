// http-inspect: our HTTP server with a responder that shows what the server read, for
// conformance testing and benchmarks (never part of `receiptd serve`).
//
//   http-inspect echo        any method and path → 200, the request body (de-chunked) as the
//                            response body; head and body leave in one write
//   http-inspect inspect     any request → 200 {"method","uri","version","headers":[[name,value],…],
//                            "body"}, every value base64: the origin contract of differential
//                            HTTP testers. Values are what a handler sees: field values without
//                            surrounding whitespace, bytes that are not UTF-8 read as U+FFFD.
//   http-inspect bench-json  POST /echo decodes {user_id, product_id, receipt_data} and answers
//                            {received_bytes, echo}; GET /healthz. The same work the Hummingbird
//                            peer in ../shared/bench does, for Benchmarks/run.sh.
//
// HOST (default 127.0.0.1), PORT (default 18083) and EVENT_LOOPS (default: cores) come from the
// environment. Requests the parser refuses get the server's usual 4xx/5xx JSON error and a close.
import Dispatch
import FoundationEssentials
import Glibc
import HTTPServer
import Logging

let modes = ["echo", "inspect", "bench-json"]
let arguments = CommandLine.arguments.dropFirst()
guard arguments.count == 1, let mode = arguments.first, modes.contains(mode) else {
    printError("usage: http-inspect echo|inspect|bench-json   (HOST, PORT, EVENT_LOOPS from the environment)\n")
    exit(64)
}

let responder: any HTTPResponder =
    switch mode {
    case "echo": EchoResponder()
    case "inspect": InspectResponder()
    default: BenchRoutes.router()
    }

var logger = Logger(label: "http-inspect")
logger.logLevel = .warning
let environment = Environment.variables
let configuration = HTTPServerConfiguration(
    host: environment["HOST"] ?? "127.0.0.1", port: Int(environment["PORT"] ?? "") ?? 18083,
    eventLoops: Int(environment["EVENT_LOOPS"] ?? "") ?? HTTPServerConfiguration.coreCount, accessLog: false)
let server = HTTPServer(configuration: configuration, responder: responder, logger: logger)
signal(SIGTERM, SIG_IGN)
signal(SIGINT, SIG_IGN)
let signals = [SIGTERM, SIGINT].map { number in
    let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
    source.setEventHandler { @Sendable in server.shutdown() }
    source.resume()
    return source
}
let port = try server.start()
// Written unbuffered: a parent reading the port from a pipe must see the line at once.
let ready = Array("http-inspect \(mode) listening on \(configuration.host):\(port)\n".utf8)
_ = ready.withUnsafeBytes { write(1, $0.baseAddress, $0.count) }
await server.waitUntilStopped()
withExtendedLifetime(signals) {}
