import Testing

@testable import HTTPServer

/// Parses `text` in one piece and also byte by byte; both must agree.
private func parseBoth(_ text: String, limits: HTTPParserLimits = HTTPParserLimits()) -> (whole: Outcome, drip: Outcome) {
    let bytes = Array(text.utf8)
    var whole = HTTPRequestParser(limits: limits)
    let a = Outcome(whole.parse(bytes))
    var drip = HTTPRequestParser(limits: limits)
    var outcome = Outcome.needMore
    for end in 1...bytes.count {
        outcome = Outcome(drip.parse(Array(bytes[0..<end])))
        if case .needMore = outcome { continue }
        if case .sendContinue = outcome { continue }
        break
    }
    return (a, outcome)
}

/// An equatable summary of a parser event.
enum Outcome: Equatable, CustomStringConvertible {
    case needMore
    case sendContinue
    case request(method: String, target: String, version: String, headers: [String], body: String, consumed: Int)
    case failure(status: Int, code: String)

    init(_ event: HTTPRequestParser.Event) {
        switch event {
        case .needMore: self = .needMore
        case .sendContinue: self = .sendContinue
        case .request(let r, let consumed):
            self = .request(
                method: r.method.rawValue, target: r.target, version: r.version.description,
                headers: r.headers.map { "\($0.name)=\($0.value)" }, body: String(decoding: r.body, as: UTF8.self),
                consumed: consumed)
        case .failure(let e): self = .failure(status: e.status.code, code: e.code)
        }
    }

    var status: Int? { if case .failure(let s, _) = self { return s } else { return nil } }
    var body: String? { if case .request(_, _, _, _, let b, _) = self { return b } else { return nil } }

    var description: String {
        switch self {
        case .needMore: "needMore"
        case .sendContinue: "sendContinue"
        case .request(let m, let t, let v, let h, let b, let c): "\(m) \(t) \(v) \(h) body=\(b.debugDescription) consumed=\(c)"
        case .failure(let s, let c): "failure \(s) \(c)"
        }
    }
}

@Suite("HTTP request parser")
struct HTTPRequestParserTests {
    @Test func simpleGet() {
        let text = "GET /v1/x?y=1 HTTP/1.1\r\nHost: a\r\nX-A: 1\r\nx-a:  2 \r\n\r\n"
        let (whole, drip) = parseBoth(text)
        #expect(whole == drip)
        #expect(
            whole == .request(
                method: "GET", target: "/v1/x?y=1", version: "HTTP/1.1", headers: ["Host=a", "X-A=1", "x-a=2"], body: "",
                consumed: text.utf8.count))
    }

    @Test func headersAreCaseInsensitiveAndRepeated() {
        var parser = HTTPRequestParser()
        guard case .request(let r, _) = parser.parse(Array("GET / HTTP/1.1\r\nhost: a\r\nAccept: x\r\nACCEPT: y\r\n\r\n".utf8)) else {
            Issue.record("no request")
            return
        }
        #expect(r.headers[first: "HOST"] == "a")
        #expect(r.headers[all: "accept"] == ["x", "y"])
    }

    @Test func contentLengthBody() {
        let text = "POST /e HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello"
        let (whole, drip) = parseBoth(text)
        #expect(whole == drip)
        #expect(whole.body == "hello")
    }

    @Test func chunkedBodyWithExtensionsAndTrailers() {
        let text = "POST /e HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5;name=v\r\nhello\r\nA\r\n, world!!!\r\n0\r\nX-Sum: 1\r\n\r\n"
        let (whole, drip) = parseBoth(text)
        #expect(whole == drip)
        #expect(whole.body == "hello, world!!!")
        var parser = HTTPRequestParser()
        if case .request(let r, let consumed) = parser.parse(Array(text.utf8)) {
            #expect(r.trailers[first: "x-sum"] == "1")
            #expect(consumed == text.utf8.count)
        } else {
            Issue.record("no request")
        }
    }

    @Test func pipelinedRequestsAreConsumedOneByOne() {
        let first = "GET /1 HTTP/1.1\r\nHost: a\r\n\r\n"
        let second = "POST /2 HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\nhi"
        var bytes = Array((first + second).utf8)
        var parser = HTTPRequestParser()
        guard case .request(let r1, let c1) = parser.parse(bytes) else {
            Issue.record("no first request")
            return
        }
        #expect(r1.target == "/1" && c1 == first.utf8.count)
        bytes.removeFirst(c1)
        guard case .request(let r2, let c2) = parser.parse(bytes) else {
            Issue.record("no second request")
            return
        }
        #expect(r2.target == "/2" && r2.body == Array("hi".utf8) && c2 == bytes.count)
    }

    @Test func oneEmptyLineBeforeTheRequestLineIsIgnored() {
        #expect(parseBoth("\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n").whole.body == "")
        #expect(parseBoth("\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n").whole.status == 400)
    }

    @Test func keepAliveRules() {
        func keepAlive(_ text: String) -> Bool {
            var parser = HTTPRequestParser()
            guard case .request(let r, _) = parser.parse(Array(text.utf8)) else { return false }
            return r.keepAlive
        }
        #expect(keepAlive("GET / HTTP/1.1\r\nHost: a\r\n\r\n"))
        #expect(!keepAlive("GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"))
        #expect(!keepAlive("GET / HTTP/1.0\r\n\r\n"))
        #expect(keepAlive("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n"))
    }

    @Test func expectContinueIsReportedOnceBeforeTheBody() {
        var parser = HTTPRequestParser()
        let head = Array("POST / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n".utf8)
        guard case .sendContinue = parser.parse(head) else {
            Issue.record("expected sendContinue")
            return
        }
        guard case .needMore = parser.parse(head) else {
            Issue.record("sendContinue must be reported once")
            return
        }
        guard case .request(let r, _) = parser.parse(head + Array("abc".utf8)) else {
            Issue.record("no request")
            return
        }
        #expect(r.body == Array("abc".utf8))
        #expect(parseBoth("POST / HTTP/1.1\r\nHost: a\r\nExpect: magic\r\nContent-Length: 1\r\n\r\nx").whole.status == 417)
    }

    static let limits = HTTPParserLimits(maxRequestLineBytes: 64, maxHeaderBytes: 128, maxHeaderCount: 4, maxBodyBytes: 16)

    @Test(arguments: [
        ("GET /\(String(repeating: "a", count: 80)) HTTP/1.1\r\nHost: a\r\n\r\n", 414),
        ("GET /\(String(repeating: "a", count: 80))", 414),
        ("GET / HTTP/1.1\r\nHost: a\r\nX: \(String(repeating: "b", count: 200))\r\n\r\n", 431),
        ("GET / HTTP/1.1\r\nHost: a\r\nX: \(String(repeating: "b", count: 200))", 431),
        ("GET / HTTP/1.1\r\nHost: a\r\nA: 1\r\nB: 1\r\nC: 1\r\nD: 1\r\n\r\n", 431),
        ("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 17\r\n\r\n", 413),
        ("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n11\r\n", 413),
        ("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n8\r\n12345678\r\n9\r\n", 413),
    ])
    func limitsHaveTheirStatus(text: String, status: Int) {
        let (whole, drip) = parseBoth(text, limits: Self.limits)
        #expect(whole.status == status, "\(text.debugDescription) → \(whole)")
        #expect(drip.status == status, "byte by byte: \(text.debugDescription) → \(drip)")
    }

    @Test(arguments: [
        "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n",
        "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
        "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: identity\r\n\r\n",
        "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n",
        "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n",
        "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1x\r\n\r\n",
        "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: -1\r\n\r\n",
        "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1, 1\r\n\r\n",
        "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nx",
        "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 99999999999999999999\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: a\r\nX: a\r\n  folded\r\n\r\n",
        "GET / HTTP/1.1\nHost: a\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: a\n\r\n",
        "GET / HTTP/1.1\r\nHost: a\rX: b\r\n\r\n",
        "GET / HTTP/1.1\r\nHost : a\r\n\r\n",
        "GET / HTTP/1.1\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
        "GET / HTTP/1.0\r\nHost: a\r\nHost: b\r\n\r\n",
        "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5 \r\nhello\r\n0\r\n\r\n",
        "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n+5\r\nhello\r\n0\r\n\r\n",
        "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
        "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhelloXY0\r\n\r\n",
        "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\nhello\r\n0\r\n\r\n",
        "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nContent-Length: 5\r\n\r\n",
        "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nTransfer-Encoding: chunked\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: a\r\nX: a\u{01}b\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: a\r\nX: a\u{7F}b\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: a\r\n: empty-name\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: a\r\nno-colon\r\n\r\n",
        "G(T / HTTP/1.1\r\nHost: a\r\n\r\n",
        "GET  / HTTP/1.1\r\nHost: a\r\n\r\n",
        "GET /\u{7F} HTTP/1.1\r\nHost: a\r\n\r\n",
        "GET / HTTP/1.1 \r\nHost: a\r\n\r\n",
        "GET / http/1.1\r\nHost: a\r\n\r\n",
        "GET / HTTP/11\r\nHost: a\r\n\r\n",
        "GET /\r\n\r\n",
    ])
    func malformedRequestsAre400(text: String) {
        let (whole, drip) = parseBoth(text)
        #expect(whole.status == 400, "\(text.debugDescription) → \(whole)")
        #expect(drip.status == 400, "byte by byte: \(text.debugDescription) → \(drip)")
    }

    @Test(arguments: ["HTTP/2.0", "HTTP/1.2", "HTTP/0.9", "HTTP/3.0"])
    func unknownVersionsAre505(version: String) {
        #expect(parseBoth("GET / \(version)\r\nHost: a\r\n\r\n").whole.status == 505)
    }

    @Test func afterAFailureTheParserStaysFailed() {
        var parser = HTTPRequestParser()
        _ = parser.parse(Array("GET / HTTP/1.1\nHost: a\r\n\r\n".utf8))
        guard case .failure = parser.parse(Array("GET / HTTP/1.1\r\nHost: a\r\n\r\n".utf8)) else {
            Issue.record("parser recovered after a failure")
            return
        }
    }
}
