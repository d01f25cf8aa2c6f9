import AppStore
import Clocks
import FoundationEssentials
import HTTPServer
import JSON
import Logging
import Synchronization

/// A loopback stand-in for Apple's verifyReceipt (Docs/apple-protocols.md §1), for tests and offline
/// development: `POST /production/verifyReceipt` and `POST /sandbox/verifyReceipt` answer the
/// scripted `Scenario` named by the receipt's content, with dates relative to when that receipt
/// was first seen (so re-posting it gets the same answer). It honours the
/// shared secret (21004 on mismatch) and can add latency to every answer.
public final class AppStoreSimulator: HTTPResponder, Sendable {
    public struct Configuration: Sendable {
        public var bundleID: String
        /// The expected `password`; nil accepts any.
        public var sharedSecret: String?
        /// Added before every answer (e.g. 300 ms for benchmarks).
        public var latency: Duration

        public init(bundleID: String = "com.example.app", sharedSecret: String? = nil, latency: Duration = .zero) {
            self.bundleID = bundleID
            self.sharedSecret = sharedSecret
            self.latency = latency
        }
    }

    public let configuration: Configuration
    private let clock: @Sendable () -> Int64
    private let calls = Mutex<[String: Int]>([:])
    /// Drills: Apple down (HTTP 503 to every verifyReceipt) until this monotonic instant.
    private let outage = Mutex<(until: ContinuousClock.Instant?, calls: Int, downCalls: Int)>((nil, 0, 0))
    /// When each receipt was first seen: its dates are relative to that moment, so posting the
    /// same receipt again gets the same answer.
    private let firstSeen = Mutex<[String: Int64]>([:])

    /// `now` gives epoch milliseconds; injectable for tests.
    public init(configuration: Configuration, now: @escaping @Sendable () -> Int64 = AppStoreSimulator.systemNow) {
        self.configuration = configuration
        self.clock = now
    }

    public static let systemNow: @Sendable () -> Int64 = { WallClock.system.now() }

    /// A simulator being served: its HTTP server (a service to run in a group, or stop with
    /// ``stop()``) and the two verifyReceipt URLs to point a client at.
    public struct Served: Sendable {
        public let server: HTTPServer
        public let port: Int
        public var productionURL: String { "http://127.0.0.1:\(port)/production/verifyReceipt" }
        public var sandboxURL: String { "http://127.0.0.1:\(port)/sandbox/verifyReceipt" }

        public func stop() async {
            server.shutdown()
            await server.waitUntilStopped()
        }
    }

    /// Starts a simulator on `host`:`port` (a loopback address; port 0 picks a free one).
    public static func serve(
        configuration: Configuration, host: String = "127.0.0.1", port: Int = 0, eventLoops: Int = 1, now: WallClock = .system,
        logger: Logger
    ) throws -> Served {
        let server = HTTPServer(
            configuration: HTTPServerConfiguration(host: host, port: port, eventLoops: eventLoops, accessLog: false),
            responder: AppStoreSimulator(configuration: configuration, now: now.now), logger: logger)
        return Served(server: server, port: try server.start())
    }

    /// Starts an outage of `duration` (zero ends one): every verifyReceipt answers HTTP 503.
    public func setOutage(_ duration: Duration) {
        outage.withLock { $0.until = duration > .zero ? ContinuousClock.now + duration : nil }
    }

    /// verifyReceipt requests so far, and how many of them arrived during an outage.
    public var callCounts: (total: Int, duringOutage: Int) { outage.withLock { ($0.calls, $0.downCalls) } }

    /// Counts the call; whether Apple is down for it.
    private func countCall() -> Bool {
        outage.withLock { o in
            o.calls += 1
            guard let until = o.until, ContinuousClock.now < until else { return false }
            o.downCalls += 1
            return true
        }
    }

    public func handler(for request: HTTPRequest) -> HTTPHandler {
        let environment: String
        switch (request.method, request.path) {
        case (.post, "/control/outage"):
            // Drills: `{"seconds": N}` takes Apple down for N seconds (0 brings it back).
            return .immediate { [self] request, _ in
                guard case .object(let o)? = try? JSONValue.parse(request.body), case .number(let n, _)? = o["seconds"],
                    (0...86_400).contains(n)
                else {
                    return HTTPResponse(
                        status: .badRequest, headers: ["Content-Type": "application/json"],
                        body: Array(#"{"error":{"code":"invalid_request","message":"send {\"seconds\": N}, 0 to 86400"}}"#.utf8))
                }
                setOutage(.milliseconds(Int64(n * 1000)))
                return HTTPResponse(status: .noContent)
            }
        case (.get, "/control/stats"):
            return .immediate { [self] _, _ in
                let (total, down) = callCounts
                return HTTPResponse(
                    status: .ok, headers: ["Content-Type": "application/json"],
                    body: Array(#"{"calls":\#(total),"calls_during_outage":\#(down)}"#.utf8))
            }
        case (.post, "/production/verifyReceipt"): environment = "Production"
        case (.post, "/sandbox/verifyReceipt"): environment = "Sandbox"
        default:
            return .immediate { _, _ in
                HTTPResponse(
                    status: .notFound, headers: ["Content-Type": "application/json"], body: Array(#"{"error":{"code":404}}"#.utf8)
                )
            }
        }
        return .task { [self] request, _ in
            if configuration.latency > .zero { try? await Task.sleep(for: configuration.latency) }
            if countCall() {
                return HTTPResponse(
                    status: .serviceUnavailable, headers: ["Content-Type": "text/plain"], body: Array("outage drill".utf8))
            }
            let body = answer(requestBody: request.body, environment: environment)
            return HTTPResponse(status: .ok, headers: ["Content-Type": "application/json"], body: body.jsonBytes)
        }
    }

    /// The answer to one request body in `environment` (`Production` or `Sandbox`).
    func answer(requestBody: [UInt8], environment: String) -> JSONValue {
        guard let request = try? JSONValue.parse(requestBody), case .string(let receiptData)? = request["receipt-data"]
        else {
            return .status(21000)
        }
        let password: String? = if case .string(let p)? = request["password"] { p } else { nil }
        guard let bytes = Data(base64Encoded: receiptData), let content = String(data: bytes, encoding: .utf8) else {
            return .status(21002)
        }
        let parts = content.split(separator: ":", maxSplits: 1)
        guard let name = parts.first, let scenario = Scenario(rawValue: String(name)) else { return .status(21002) }
        if let secret = configuration.sharedSecret, password != secret { return .status(21004) }
        let tag = parts.count > 1 ? String(parts[1]) : "0"
        let callNumber = calls.withLock { counts -> Int in
            counts[content + environment, default: 0] += 1
            return counts[content + environment]!
        }
        switch scenario {
        case .sandboxOnly where environment == "Production": return .status(21007)
        case .productionOnly where environment == "Sandbox": return .status(21008)
        case .unavailableOnce where callNumber == 1: return .status(21005)
        case .retryableOnce where callNumber == 1: return .object(["status": .int(21100), "is_retryable": .bool(true)])
        case .malformed: return .status(21002)
        case .serverUnavailable: return .status(21005)
        case .notAuthenticated: return .status(21003)
        case .accountNotFound: return .status(21010)
        default: break
        }
        let now = clock()
        let anchor = firstSeen.withLock { seen in
            if let t = seen[content] { return t }
            seen[content] = now
            return now
        }
        return ReceiptScript(scenario: scenario, tag: tag, bundleID: configuration.bundleID, now: anchor, asOf: now)
            .response(environment: environment, receiptData: receiptData)
    }
}
