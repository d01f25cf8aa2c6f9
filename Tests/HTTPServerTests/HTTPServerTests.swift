import CLinux
import Foundation
import Logging
import ReceiptTesting
import Synchronization
import Testing

@testable import HTTPServer

/// A server on 127.0.0.1:0 with a few routes that exercise the connection logic.
private func makeServer(_ configure: (inout HTTPServerConfiguration) -> Void = { _ in }) throws -> HTTPServer {
    var configuration = HTTPServerConfiguration(host: "127.0.0.1", port: 0, eventLoops: 2, accessLog: false)
    configure(&configuration)
    var router = Router()
    router.immediate(.get, "/hello") { _, _ in .text("hello") }
    router.on(.post, "/echo") { request, _ in HTTPResponse(body: request.body) }
    // The nice value of the thread a handler runs on, before and after an await.
    for method in [HTTPMethod.get, .post, .delete] {
        router.on(method, "/nice") { _, _ in
            let before = receiptd_thread_nice()
            await Task.yield()
            return .text("\(before) \(receiptd_thread_nice())")
        }
    }
    router.on(.get, "/slow/{ms}") { request, context in
        let ms = Int(context.parameters["ms"] ?? "0") ?? 0
        if let tag = request.queryValue("tag") { SlowStarted.shared.insert(tag) }
        try? await Task.sleep(for: .milliseconds(ms))
        return .text("slow \(ms)")
    }
    router.immediate(.get, "/id") { _, context in .text(context.requestID) }
    // `parts` parts of `size` bytes, streamed; `fail` throws instead of the part after that many.
    router.immediate(.get, "/stream/{parts}/{size}") { request, context in
        let (parts, size) = (Int(context.parameters["parts"] ?? "0") ?? 0, Int(context.parameters["size"] ?? "0") ?? 0)
        let fail = request.queryValue("fail").flatMap { Int($0) }
        let produced = StreamCounter.shared
        return HTTPResponse(
            headers: ["Content-Type": "application/octet-stream"],
            stream: HTTPBodyStream {
                let n = produced.next()
                if let fail, n >= fail { throw CancellationError() }
                return n < parts ? [UInt8](repeating: UInt8(ascii: "a") + UInt8(n % 26), count: size) : nil
            })
    }
    router.immediate(.get, "/big/{bytes}") { request, context in
        if let tag = request.queryValue("tag") { SlowStarted.shared.insert(tag) }
        return HTTPResponse(body: [UInt8](repeating: 0x61, count: Int(context.parameters["bytes"] ?? "0") ?? 0))
    }
    var logger = Logger(label: "test")
    logger.logLevel = .warning
    let server = HTTPServer(configuration: configuration, responder: router, logger: logger)
    try server.start()
    return server
}

private func stop(_ server: HTTPServer) async {
    server.shutdown()
    await server.waitUntilStopped()
}

/// How many parts the `/stream` route has produced since the last reset (one stream at a time).
/// The tags of the `/slow` and `/big` requests whose handlers have started (`?tag=`), so a test
/// knows its request is in flight.
final class SlowStarted: Sendable {
    static let shared = SlowStarted()
    private let tags = Mutex<Set<String>>([])
    func insert(_ tag: String) { _ = tags.withLock { $0.insert(tag) } }
    func contains(_ tag: String) -> Bool { tags.withLock { $0.contains(tag) } }

    /// Sends `GET /slow/{ms}` on `client` and returns once its handler has started.
    static func inFlight(_ client: TestClient, ms: Int) async throws {
        let tag = UUID().uuidString
        client.send("GET /slow/\(ms)?tag=\(tag) HTTP/1.1\r\nHost: t\r\n\r\n")
        #expect(try await eventually { shared.contains(tag) })
    }
}

final class StreamCounter: Sendable {
    static let shared = StreamCounter()
    private let count = Mutex(0)
    func next() -> Int {
        count.withLock { n in
            defer { n += 1 }
            return n
        }
    }
    func reset() { count.withLock { $0 = 0 } }
    var produced: Int { count.withLock { $0 } }
}

/// The head of a raw response and its body dechunked; nil when the chunks do not end properly.
private func dechunk(_ raw: [UInt8]) -> (head: String, body: [UInt8], rest: [UInt8])? {
    guard let end = raw.indices.dropLast(3).first(where: { raw[$0..<$0 + 4].elementsEqual("\r\n\r\n".utf8) }) else {
        return nil
    }
    var at = end + 4
    var body: [UInt8] = []
    while true {
        guard let lineEnd = raw[at...].indices.dropLast().first(where: { raw[$0] == 13 && raw[$0 + 1] == 10 }),
            let size = Int(String(decoding: raw[at..<lineEnd], as: UTF8.self), radix: 16), lineEnd + 2 + size + 2 <= raw.count
        else { return nil }
        at = lineEnd + 2
        if size == 0 { return (String(decoding: raw[..<end], as: UTF8.self), body, Array(raw[(at + 2)...])) }
        body += raw[at..<at + size]
        at += size + 2
    }
}

@Suite("HTTP server, live on loopback", .serialized)
struct HTTPServerTests {
    /// A write's handler runs at the configured lower priority, after an await too; a read's
    /// handler does not; with 0 neither does.
    @Test func writesHandlersRunAtALowerPriorityThanReads() async throws {
        func nice(_ method: String, _ server: HTTPServer) async throws -> String {
            let client = try TestClient(port: server.port)
            client.send("\(method) /nice HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n")
            return try #require(await client.readResponse()).text
        }
        let base = receiptd_thread_nice()
        let server = try makeServer { $0.writeHandlersNice = 7 }
        #expect(try await nice("POST", server) == "7 7")
        #expect(try await nice("DELETE", server) == "7 7")
        #expect(try await nice("GET", server) == "\(base) \(base)")
        await stop(server)
        let plain = try makeServer { $0.writeHandlersNice = 0 }
        #expect(try await nice("POST", plain) == "\(base) \(base)")
        await stop(plain)
    }

    @Test func aStreamedBodyArrivesInChunksAndTheConnectionGoesOn() async throws {
        let server = try makeServer()
        StreamCounter.shared.reset()
        let client = try TestClient(port: server.port)
        client.send("GET /stream/5/1000 HTTP/1.1\r\nHost: t\r\n\r\nGET /hello HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        let raw = try #require(await client.readToEOF())
        let (head, body, rest) = try #require(dechunk(raw))
        #expect(head.contains("Transfer-Encoding: chunked") && !head.contains("Content-Length"))
        #expect(body.count == 5_000 && body.first == UInt8(ascii: "a") && body.last == UInt8(ascii: "e"))
        #expect(String(decoding: rest, as: UTF8.self).hasSuffix("\r\n\r\nhello"))
        await stop(server)
    }

    @Test func aStreamedBodyToHTTP10EndsWithTheConnection() async throws {
        let server = try makeServer()
        StreamCounter.shared.reset()
        let client = try TestClient(port: server.port)
        client.send("GET /stream/3/10 HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
        let text = String(decoding: try #require(await client.readToEOF()), as: UTF8.self)
        #expect(!text.contains("Transfer-Encoding") && !text.contains("Content-Length") && text.contains("Connection: close"))
        #expect(
            text.hasSuffix(
                "\r\n\r\n" + String(repeating: "a", count: 10) + String(repeating: "b", count: 10)
                    + String(repeating: "c", count: 10)))
        await stop(server)
    }

    @Test func aSlowReaderHoldsTheProducerBack() async throws {
        let server = try makeServer()
        StreamCounter.shared.reset()
        let client = try TestClient(port: server.port)
        client.send("GET /stream/64/1000000 HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        #expect(try await eventually { StreamCounter.shared.produced > 0 })
        // Time for a producer that did not wait for the reader to run far ahead.
        try await Task.sleep(for: .milliseconds(300))
        // Not read: only what the sockets' buffers hold has been produced, not 64 MB.
        let produced = StreamCounter.shared.produced
        #expect(produced > 0 && produced < 32, "\(produced) parts produced for a reader that reads nothing")
        let raw = try #require(await client.readToEOF())
        #expect(try #require(dechunk(raw)).body.count == 64_000_000)
        await stop(server)
    }

    @Test func aStreamThatFailsCutsTheConnectionBeforeItsEnd() async throws {
        let server = try makeServer()
        StreamCounter.shared.reset()
        let client = try TestClient(port: server.port)
        client.send("GET /stream/10/100?fail=3 HTTP/1.1\r\nHost: t\r\n\r\n")
        let raw = try #require(await client.readToEOF())
        #expect(dechunk(raw) == nil, "a cut stream must not look complete")
        #expect(String(decoding: raw, as: UTF8.self).contains(String(repeating: "c", count: 100)))
        await stop(server)
    }

    @Test func keepAliveServesSeveralRequestsOnOneConnection() async throws {
        let server = try makeServer()
        let client = try TestClient(port: server.port)
        for _ in 0..<3 {
            client.send("GET /hello HTTP/1.1\r\nHost: t\r\n\r\n")
            let response = await client.readResponse()
            #expect(response?.status == 200)
            #expect(response?.text == "hello")
            #expect(response?.header("Connection") == nil)
        }
        await stop(server)
    }

    @Test func pipelinedRequestsAreAnsweredInOrder() async throws {
        let server = try makeServer()
        let client = try TestClient(port: server.port)
        // The first is slow (a task), the second immediate: order must still hold.
        client.send(
            "GET /slow/100 HTTP/1.1\r\nHost: t\r\n\r\nGET /hello HTTP/1.1\r\nHost: t\r\n\r\n"
                + "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n\r\nabc")
        #expect(await client.readResponse()?.text == "slow 100")
        #expect(await client.readResponse()?.text == "hello")
        #expect(await client.readResponse()?.text == "abc")
        await stop(server)
    }

    @Test func chunkedBodiesAreDechunked() async throws {
        let server = try makeServer()
        let client = try TestClient(port: server.port)
        client.send("POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n")
        client.send("4\r\ndefg\r\n0\r\n\r\n")
        let response = await client.readResponse()
        #expect(response?.text == "abcdefg")
        await stop(server)
    }

    @Test func expectContinueGetsAnInterimResponse() async throws {
        let server = try makeServer()
        let client = try TestClient(port: server.port)
        client.send("POST /echo HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\n")
        let interim = await client.readResponse()
        #expect(interim?.status == 100)
        client.send("body")
        let final = await client.readResponse()
        #expect(final?.status == 200)
        #expect(final?.text == "body")
        await stop(server)
    }

    @Test func headHasNoBodyButTheLengthOfGet() async throws {
        let server = try makeServer()
        let client = try TestClient(port: server.port)
        client.send("HEAD /hello HTTP/1.1\r\nHost: t\r\n\r\nGET /hello HTTP/1.1\r\nHost: t\r\n\r\n")
        let head = await client.readResponse(headRequest: true)
        #expect(head?.status == 200)
        #expect(head?.header("Content-Length") == "5")
        #expect(head?.body.isEmpty == true)
        // The next response starts right after HEAD's head: no stray body bytes.
        #expect(await client.readResponse()?.text == "hello")
        await stop(server)
    }

    @Test func http10ClosesUnlessKeepAlive() async throws {
        let server = try makeServer()
        let closing = try TestClient(port: server.port)
        closing.send("GET /hello HTTP/1.0\r\n\r\n")
        let r1 = await closing.readResponse()
        #expect(r1?.header("Connection") == "close")
        #expect(await closing.readsEOF())

        let keeping = try TestClient(port: server.port)
        keeping.send("GET /hello HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
        #expect(await keeping.readResponse()?.header("Connection") == "keep-alive")
        keeping.send("GET /hello HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
        #expect(await keeping.readResponse()?.status == 200)
        await stop(server)
    }

    @Test func connectionCloseIsHonoured() async throws {
        let server = try makeServer()
        let client = try TestClient(port: server.port)
        client.send("GET /hello HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        #expect(await client.readResponse()?.header("Connection") == "close")
        #expect(await client.readsEOF())
        await stop(server)
    }

    @Test func malformedRequestGets400JSONThenClose() async throws {
        let server = try makeServer()
        let client = try TestClient(port: server.port)
        client.send("GET /hello HTTP/1.1\r\nHost: t\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n")
        let response = await client.readResponse()
        #expect(response?.status == 400)
        #expect(response?.header("Content-Type") == "application/json")
        #expect(response?.text.contains(#""code":"invalid_framing""#) == true)
        #expect(await client.readsEOF())
        await stop(server)
    }

    @Test func limitsAnswerWithTheirStatus() async throws {
        let server = try makeServer {
            $0.limits = HTTPParserLimits(maxRequestLineBytes: 100, maxHeaderBytes: 200, maxHeaderCount: 5, maxBodyBytes: 10)
        }
        let cases: [(String, Int)] = [
            ("GET /\(String(repeating: "x", count: 200)) HTTP/1.1\r\nHost: t\r\n\r\n", 414),
            ("GET / HTTP/1.1\r\nHost: t\r\nX: \(String(repeating: "x", count: 300))\r\n\r\n", 431),
            ("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 11\r\n\r\n", 413),
            ("GET / HTTP/2.0\r\nHost: t\r\n\r\n", 505),
        ]
        for (request, status) in cases {
            let client = try TestClient(port: server.port)
            client.send(request)
            #expect(await client.readResponse()?.status == status, "\(request.prefix(40))")
        }
        await stop(server)
    }

    @Test func requestIDIsTakenOrMadeAndEchoed() async throws {
        let server = try makeServer()
        let client = try TestClient(port: server.port)
        client.send("GET /id HTTP/1.1\r\nHost: t\r\nX-Request-Id: abc-123\r\n\r\n")
        let taken = await client.readResponse()
        #expect(taken?.header("X-Request-Id") == "abc-123")
        #expect(taken?.text == "abc-123")
        client.send("GET /id HTTP/1.1\r\nHost: t\r\nX-Request-Id: bad id\r\n\r\n")
        let made = await client.readResponse()
        #expect(made?.header("X-Request-Id") != "bad id")
        #expect(made?.header("X-Request-Id") == made?.text)
        await stop(server)
    }

    @Test func slowlorisHeadIsCutOffWith408() async throws {
        let server = try makeServer { $0.headerTimeout = .milliseconds(200) }
        let client = try TestClient(port: server.port)
        client.send("GET /hello HTTP/1.1\r\nHost: t\r\n")
        try await Task.sleep(for: .milliseconds(100))
        client.send("X-Slow: 1\r\n")  // progress does not extend the deadline
        let response = await client.readResponse()
        #expect(response?.status == 408)
        #expect(await client.readsEOF())
        await stop(server)
    }

    @Test func aThousandSlowlorisConnectionsDoNotStopNormalClients() async throws {
        let server = try makeServer { $0.headerTimeout = .milliseconds(1500) }
        // 1,000 connections each start a request and then drip its head a byte at a time.
        var slow: [TestClient] = []
        for _ in 0..<1000 {
            let client = try TestClient(port: server.port)
            client.send("GET /hello HTTP/1.1\r\nHost: t\r\n")
            slow.append(client)
        }
        let dripping = Thread { [slow] in
            for round in 0..<10 {
                for client in slow { client.send("X-\(round): 1\r\n") }
                Thread.sleep(forTimeInterval: 0.1)
            }
        }
        dripping.start()
        // Meanwhile normal clients are served, each on a fresh connection.
        for i in 0..<100 {
            let client = try TestClient(port: server.port)
            client.send("GET /hello HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
            let response = await client.readResponse()
            #expect(response?.status == 200, "normal client \(i)")
        }
        // The slow heads never finish: each gets 408 once its head deadline passes, then EOF.
        for client in slow.prefix(20) {
            #expect(await client.readResponse()?.status == 408)
            #expect(await client.readsEOF())
        }
        slow.removeAll()
        await stop(server)
    }

    @Test func slowBodyIsCutOffWith408() async throws {
        let server = try makeServer { $0.bodyTimeout = .milliseconds(200) }
        let client = try TestClient(port: server.port)
        client.send("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\nabc")
        #expect(await client.readResponse()?.status == 408)
        await stop(server)
    }

    @Test func idleKeepAliveConnectionIsClosed() async throws {
        let server = try makeServer { $0.idleTimeout = .milliseconds(150) }
        let client = try TestClient(port: server.port)
        client.send("GET /hello HTTP/1.1\r\nHost: t\r\n\r\n")
        #expect(await client.readResponse()?.status == 200)
        #expect(await client.readsEOF())
        await stop(server)
    }

    @Test func slowReaderIsClosedAfterTheWriteTimeout() async throws {
        let server = try makeServer { $0.writeTimeout = .milliseconds(200) }
        let client = try TestClient(port: server.port)
        let tag = UUID().uuidString
        client.send("GET /big/50000000?tag=\(tag) HTTP/1.1\r\nHost: t\r\n\r\n")
        #expect(try await eventually { SlowStarted.shared.contains(tag) })
        // 50 MB is far more than loopback socket buffers hold. Not reading: the server gives up on
        // its own once a write has waited the timeout (its sweep runs on its loop threads). Waited
        // for rather than slept on, so a loaded machine that runs the sweep late cannot make the
        // drain below read the whole body instead. Draining then ends in EOF long before 50 MB.
        #expect(try await eventually { server.connectionCount == 0 })
        let received = await client.drainToEOF()
        #expect(received != nil, "no end of the connection: errno \(client.lastError)")
        #expect((received ?? .max) < 50_000_000)
        await stop(server)
    }

    @Test func pastMaxConnectionsNewOnesGet503() async throws {
        let server = try makeServer { $0.maxConnections = 2 }
        let a = try TestClient(port: server.port)
        let b = try TestClient(port: server.port)
        a.send("GET /hello HTTP/1.1\r\nHost: t\r\n\r\n")
        b.send("GET /hello HTTP/1.1\r\nHost: t\r\n\r\n")
        #expect(await a.readResponse()?.status == 200)
        #expect(await b.readResponse()?.status == 200)
        let c = try TestClient(port: server.port)
        c.send("GET /hello HTTP/1.1\r\nHost: t\r\n\r\n")
        let rejected = await c.readResponse()
        #expect(rejected?.status == 503)
        #expect(rejected?.header("Retry-After") == "1")
        await stop(server)
    }

    @Test func manyIdleConnectionsDoNotStopOthers() async throws {
        let server = try makeServer()
        var idle: [TestClient] = []
        for _ in 0..<2000 { idle.append(try TestClient(port: server.port)) }
        let client = try TestClient(port: server.port)
        client.send("GET /hello HTTP/1.1\r\nHost: t\r\n\r\n")
        #expect(await client.readResponse()?.status == 200)
        // Idle connections still in the accept queue are counted once a loop accepts them.
        #expect(try await eventually { server.connectionCount == 2001 })
        idle.removeAll()
        await stop(server)
    }

    @Test func aServerDroppedRightAfterShutdownStillFinishesItsRequests() async throws {
        // Found by the libcurl transport tests: the acceptors died with the HTTPServer value while
        // their loops were still draining an in-flight request, and the next tick crashed.
        var server: HTTPServer? = try makeServer()
        let busy = try TestClient(port: server!.port)
        try await SlowStarted.inFlight(busy, ms: 300)
        server!.shutdown()
        server = nil
        // The loops keep ticking through the grace period on their own and answer the request.
        let response = await busy.readResponse()
        #expect(response?.status == 200)
        #expect(response?.header("Connection") == "close")
    }

    @Test func gracefulShutdownFinishesInFlightRequests() async throws {
        let server = try makeServer()
        let busy = try TestClient(port: server.port)
        let idle = try TestClient(port: server.port)
        try await SlowStarted.inFlight(busy, ms: 300)
        server.shutdown()
        let response = await busy.readResponse()
        #expect(response?.status == 200)
        #expect(response?.text == "slow 300")
        #expect(response?.header("Connection") == "close")
        #expect(await idle.readsEOF())
        await server.waitUntilStopped()
        #expect(throws: SystemError.self) { try TestClient(port: server.port) }
    }

    @Test func shutdownDeadlineClosesWhatIsStillRunning() async throws {
        let server = try makeServer { $0.shutdownGracePeriod = .milliseconds(100) }
        let busy = try TestClient(port: server.port)
        try await SlowStarted.inFlight(busy, ms: 6000)
        let start = ContinuousClock.now
        server.shutdown()
        await server.waitUntilStopped()
        #expect(ContinuousClock.now - start < .seconds(4))  // long before the handler's 6 s
        #expect(await busy.readsEOF())
    }
}
