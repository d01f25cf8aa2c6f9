import Foundation
import HTTPServer
import JSON
import Logging
import ReceiptTesting
import Testing

@testable import CurlTransport

/// Holds each request until `expected` have arrived, then lets them all go at once: without
/// polling, so a loaded machine spends nothing on the waiting ones. Gives up ``hangGuard`` after the first
/// arrives (each then answers false), so a transport that cannot have them all in flight fails
/// the test instead of hanging it.
private actor Gathering {
    private let expected: Int
    private var arrived = 0
    private var waiting: [CheckedContinuation<Bool, Never>] = []
    private var gaveUp = false

    init(expected: Int) { self.expected = expected }

    func arrive() async -> Bool {
        arrived += 1
        if arrived == 1 {
            Task {
                try? await Task.sleep(for: hangGuard)
                self.giveUp()
            }
        }
        if arrived >= expected {
            for waiter in waiting { waiter.resume(returning: true) }
            waiting.removeAll()
            return true
        }
        if gaveUp { return false }
        return await withCheckedContinuation { waiting.append($0) }
    }

    private func giveUp() {
        gaveUp = true
        for waiter in waiting { waiter.resume(returning: false) }
        waiting.removeAll()
    }
}

/// A loopback server: /echo answers the body, /slow after 300 ms, /big with 64 KiB, /gather once
/// `gathering` requests are in flight at once (504 if they never are).
private func withServer(gathering: Int = 0, _ body: (Int) async throws -> Void) async throws {
    var router = Router()
    let gathered = Gathering(expected: gathering)
    router.on(.post, "/gather") { _, _ in
        await gathered.arrive() ? .json(.object(["status": .int(0)])) : HTTPResponse(status: .gatewayTimeout, body: [])
    }
    router.immediate(.post, "/echo") { request, _ in
        HTTPResponse(status: .ok, headers: ["Content-Type": "application/json"], body: request.body)
    }
    router.on(.post, "/slow") { _, _ in
        try? await Task.sleep(for: .milliseconds(300))
        return .json(.object(["status": .int(0)]))
    }
    router.immediate(.post, "/big") { _, _ in HTTPResponse(status: .ok, body: [UInt8](repeating: 0x20, count: 64 * 1024)) }
    // What arrived, as the body: method, Authorization, Content-Type, the body's length.
    for method in [HTTPMethod.get, .put, .post] {
        router.immediate(method, "/seen") { request, _ in
            let seen = [
                request.method.rawValue, request.headers[first: "Authorization"] ?? "-",
                request.headers[first: "Content-Type"] ?? "-", String(request.body.count),
            ]
            return HTTPResponse(
                status: .tooManyRequests, headers: ["Retry-After": "1700000000123"], body: Array(seen.joined(separator: " ").utf8)
            )
        }
    }
    router.immediate(.post, "/fail") { _, _ in HTTPResponse(status: .serviceUnavailable, body: Array("down".utf8)) }
    let server = HTTPServer(
        configuration: HTTPServerConfiguration(host: "127.0.0.1", port: 0, eventLoops: 1, maxConnections: 4096, accessLog: false),
        responder: router, logger: Logger(label: "test"))
    let port = try server.start()
    defer { server.shutdown() }
    try await body(port)
}

/// Established TCP connections from this machine to `port` on loopback (/proc/net/tcp: the client
/// sides, whose remote port it is).
private func openConnections(to port: Int) throws -> Int {
    // Read to the end: /proc says its size is 0, and one read returns only its first page.
    guard let file = FileHandle(forReadingAtPath: "/proc/net/tcp") else { throw CocoaError(.fileReadNoSuchFile) }
    defer { try? file.close() }
    let table = String(decoding: try file.readToEnd() ?? Data(), as: UTF8.self)
    let remote = "0100007F:" + String(format: "%04X", port)
    return table.split(separator: "\n").dropFirst().filter { line in
        let fields = line.split(separator: " ")
        return fields.count > 3 && fields[2] == remote && fields[3] == "01"
    }.count
}

private let loopback = CurlMultiTransport.Configuration(connectTimeout: .seconds(2), maxResponseBytes: 16 * 1024, allowHTTP: true)

@Suite("libcurl multi transport")
struct CurlMultiTransportTests {
    @Test func postsJSONAndReturnsStatusAndBody() async throws {
        let transport = CurlMultiTransport(configuration: loopback)
        defer { transport.shutdown() }
        try await withServer { port in
            let body = Array(#"{"receipt-data":"abc","password":"s"}"#.utf8)
            let result = await transport.post(url: "http://127.0.0.1:\(port)/echo", json: body, timeout: .seconds(2))
            #expect(result == .response(status: 200, body: body))
            #expect(
                await transport.post(url: "http://127.0.0.1:\(port)/fail", json: [], timeout: .seconds(2))
                    == .response(status: 503, body: Array("down".utf8)))
        }
    }

    @Test func getPutAndPostCarryTheirHeadersAndRetryAfterComesBack() async throws {
        let transport = CurlMultiTransport(configuration: loopback)
        defer { transport.shutdown() }
        try await withServer { port in
            func seen(_ method: OutboundRequest.Method, _ body: [UInt8]?) async -> TransportResult {
                await transport.send(
                    OutboundRequest(
                        method: method, url: "http://127.0.0.1:\(port)/seen", headers: ["Authorization: Bearer t0k"], body: body,
                        timeout: .seconds(2)))
            }
            func answer(_ text: String) -> TransportResult {
                .response(status: 429, body: Array(text.utf8), retryAfter: "1700000000123")
            }
            #expect(await seen(.get, nil) == answer("GET Bearer t0k - 0"))
            #expect(await seen(.put, Array("{}".utf8)) == answer("PUT Bearer t0k application/json 2"))
            #expect(await seen(.post, nil) == answer("POST Bearer t0k - 0"))
        }
    }

    /// libcurl removes `.` and `..` segments unless told not to; the transport tells it, so a path
    /// arrives byte for byte as built (the rule ``AppleIdentifier`` relies on twice over).
    @Test func thePathGoesOutExactlyAsBuiltDotSegmentsIncluded() async throws {
        struct EchoTarget: HTTPResponder {
            func handler(for request: HTTPRequest) -> HTTPHandler {
                .immediate { request, _ in HTTPResponse(status: .ok, body: Array(request.target.utf8)) }
            }
        }
        let server = HTTPServer(
            configuration: HTTPServerConfiguration(host: "127.0.0.1", port: 0, eventLoops: 1, accessLog: false),
            responder: EchoTarget(), logger: Logger(label: "test"))
        let port = try server.start()
        defer { server.shutdown() }
        let transport = CurlMultiTransport(configuration: loopback)
        defer { transport.shutdown() }
        for path in ["/inApps/v2/history/..", "/inApps/v2/history/.", "/a/./b/../c", "/a/%2E%2E/b", "/x/..?revision=1"] {
            let result = await transport.send(
                OutboundRequest(method: .get, url: "http://127.0.0.1:\(port)\(path)", timeout: .seconds(2)))
            #expect(result == .response(status: 200, body: Array(path.utf8)), "\(path)")
        }
    }

    @Test func manySlowExchangesAreInFlightAtOnce() async throws {
        let transport = CurlMultiTransport(configuration: loopback)
        defer { transport.shutdown() }
        // Each of the 300 is answered only once all 300 have arrived, so every one succeeding means
        // all were in flight at once: a proof by counting, not by a deadline a busy machine can miss.
        try await withServer(gathering: 300) { port in
            let results = await withTaskGroup(of: TransportResult.self) { group in
                for _ in 0..<300 {
                    group.addTask {
                        await transport.post(url: "http://127.0.0.1:\(port)/gather", json: [], timeout: .seconds(40))
                    }
                }
                return await group.reduce(into: []) { $0.append($1) }
            }
            #expect(results.count == 300)
            #expect(results.allSatisfy { if case .response(200, _, _) = $0 { true } else { false } })
        }
    }

    /// A burst's connections stay open for the next burst (`keptConnections`): libcurl's own cache
    /// shrinks with the transfers in flight as they end, closing all but a few, and each one the
    /// next burst opens again costs a TCP (and, to Apple, a TLS) handshake.
    @Test func aBurstsConnectionsAreKeptForTheNext() async throws {
        let transport = CurlMultiTransport(configuration: loopback)  // keptConnections 64
        defer { transport.shutdown() }
        try await withServer(gathering: 40) { port in
            // All 40 in flight at once (the server answers none before the 40th arrives): 40 connections.
            let results = await withTaskGroup(of: TransportResult.self) { group in
                for _ in 0..<40 {
                    group.addTask {
                        await transport.post(url: "http://127.0.0.1:\(port)/gather", json: [], timeout: .seconds(40))
                    }
                }
                return await group.reduce(into: []) { $0.append($1) }
            }
            #expect(results.allSatisfy { if case .response(200, _, _) = $0 { true } else { false } })
            let kept = try openConnections(to: port)
            #expect(kept == 40)
        }
    }

    @Test func aSlowAnswerTimesOut() async throws {
        let transport = CurlMultiTransport(configuration: loopback)
        defer { transport.shutdown() }
        try await withServer { port in
            let result = await transport.post(url: "http://127.0.0.1:\(port)/slow", json: [], timeout: .milliseconds(100))
            guard case .failure(let reason) = result else {
                Issue.record("no timeout: \(result)")
                return
            }
            #expect(reason.lowercased().contains("timeout") || reason.lowercased().contains("timed out"))
        }
    }

    @Test func anOversizedAnswerIsRefused() async throws {
        let transport = CurlMultiTransport(configuration: loopback)
        defer { transport.shutdown() }
        try await withServer { port in
            let result = await transport.post(url: "http://127.0.0.1:\(port)/big", json: [], timeout: .seconds(2))
            #expect(result == .failure("the response is larger than 16384 bytes"))
        }
    }

    @Test func plainHTTPNeedsPermission() async throws {
        let transport = CurlMultiTransport(configuration: .init(allowHTTP: false))
        defer { transport.shutdown() }
        try await withServer { port in
            guard case .failure = await transport.post(url: "http://127.0.0.1:\(port)/echo", json: [], timeout: .seconds(2))
            else {
                Issue.record("http:// allowed without allowHTTP")
                return
            }
        }
    }

    @Test func aRefusedConnectionIsATransportFailure() async {
        let transport = CurlMultiTransport(configuration: loopback)
        defer { transport.shutdown() }
        // Port 1 on loopback: nothing listens there.
        guard case .failure = await transport.post(url: "http://127.0.0.1:1/echo", json: [], timeout: .seconds(2)) else {
            Issue.record("no failure")
            return
        }
    }

    @Test func aTransportShutDownBeforeItsFirstTransferRefusesAtOnce() async {
        // Built and stopped without ever sending: no driver thread was started, and nothing waits.
        let transport = CurlMultiTransport(configuration: loopback)
        transport.shutdown()
        guard case .failure(let reason) = await transport.post(url: "http://127.0.0.1:1/echo", json: [], timeout: .seconds(2))
        else {
            Issue.record("a stopped transport sent")
            return
        }
        #expect(reason.contains("shut down"))
    }
}
