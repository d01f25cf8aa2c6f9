import Testing

@testable import HTTPServer

@Suite("Router")
struct RouterTests {
    private let context = RequestContext(requestID: "r-1", remoteAddress: "127.0.0.1")

    private func answer(_ router: Router, _ method: HTTPMethod, _ target: String) async -> HTTPResponse {
        let request = HTTPRequest(method: method, target: target)
        switch router.handler(for: request) {
        case .immediate(let h): return h(request, context)
        case .task(let h): return await h(request, context)
        case .immediateOrTask(let immediate, let task):
            if let response = immediate(request, context) { return response }
            return await task(request, context)
        }
    }

    private func router() -> Router {
        var router = Router()
        router.on(.get, "/v1/subscribers/{id}") { _, c in .text("get \(c.parameters["id"] ?? "?")") }
        router.on(.delete, "/v1/subscribers/{id}") { _, c in .text("delete \(c.parameters["id"] ?? "?")") }
        router.immediate(.post, "/v1/receipts") { _, _ in .text("post") }
        return router
    }

    @Test func parametersArePercentDecoded() async {
        let r = await answer(router(), .get, "/v1/subscribers/user%201?x=1")
        #expect(r.body == Array("get user 1".utf8))
    }

    /// RFC 9112 §3.2.2: absolute-form is accepted and the host part plays no role in routing.
    @Test(arguments: [
        "http://host/v1/subscribers/user%201?x=1", "HTTPS://example.com:8443/v1/subscribers/user%201",
        "http://[::1]:80/v1/subscribers/user%201?y", "http://h/v1/subscribers/user%201",
    ])
    func absoluteFormRoutesByItsPath(_ target: String) async {
        #expect(await answer(router(), .get, target).body == Array("get user 1".utf8))
    }

    @Test func absoluteFormPathAndQuery() {
        #expect(HTTPRequest(method: .get, target: "http://h").path == "/")
        #expect(HTTPRequest(method: .get, target: "http://h?a=1").path == "/")
        #expect(HTTPRequest(method: .get, target: "http://h?a=1").queryValue("a") == "1")
        #expect(HTTPRequest(method: .get, target: "http://h/p?q=/x").path == "/p")
        #expect(HTTPRequest(method: .get, target: "http://h/p?q=/x").queryValue("q") == "/x")
        #expect(HTTPRequest(method: .get, target: "/p?u=http://x/y").path == "/p")
        #expect(HTTPRequest(method: .get, target: "/p?u=http://x/y").queryValue("u") == "http://x/y")
    }

    /// HTTP's delimiters are bytes: a `?`, `/`, `&` or `=` followed by a combining mark (one
    /// Character to Swift) still ends what it ends, and a literal segment matches its bytes alone
    /// (`é` composed or decomposed are two paths).
    @Test func thePathIsCutAndMatchedAsBytes() async {
        let r = HTTPRequest(method: .get, target: "/a/\u{301}b?\u{301}x=1&\u{301}y=\u{301}2")
        #expect(r.path.utf8.elementsEqual("/a/\u{301}b".utf8))
        #expect(r.query?.utf8.elementsEqual("\u{301}x=1&\u{301}y=\u{301}2".utf8) == true)
        #expect(r.queryValue("\u{301}y")?.utf8.elementsEqual("\u{301}2".utf8) == true)
        #expect(r.queryValue("\u{301}x") == "1")
        #expect("/a//b/".split(byte: UInt8(ascii: "/"), omittingEmpty: true) == ["a", "b"])
        #expect("a&&b&".split(byte: UInt8(ascii: "&"), omittingEmpty: false) == ["a", "", "b", ""])
        var router = Router()
        router.on(.get, "/v1/caf\u{E9}/{id}") { _, c in .text("got \(c.parameters["id"] ?? "?")") }
        #expect(await answer(router, .get, "/v1/caf\u{E9}/x").body == Array("got x".utf8))
        #expect(await answer(router, .get, "/v1/cafe\u{301}/x").status.code == 404)
        #expect(await answer(router, .get, "/v1/caf\u{E9}/\u{301}x").body == Array("got \u{301}x".utf8))
    }

    @Test func methodsSelectTheRoute() async {
        #expect(await answer(router(), .delete, "/v1/subscribers/a").body == Array("delete a".utf8))
        #expect(await answer(router(), .post, "/v1/receipts").body == Array("post".utf8))
    }

    @Test func headIsServedByGet() async {
        #expect(await answer(router(), .head, "/v1/subscribers/a").status == .ok)
    }

    @Test func unknownPathIs404() async {
        let r = await answer(router(), .get, "/v1/nothing")
        #expect(r.status.code == 404)
        #expect(String(decoding: r.body, as: UTF8.self).contains(#""code":"not_found""#))
    }

    @Test(arguments: [HTTPMethod.put, .trace, .options])
    func otherMethodIs405WithAllow(method: HTTPMethod) async {
        let r = await answer(router(), method, "/v1/subscribers/a")
        #expect(r.status.code == 405)
        #expect(r.headers[first: "Allow"] == "GET, HEAD, DELETE")
    }

    @Test func emptyParameterDoesNotMatch() async {
        #expect(await answer(router(), .get, "/v1/subscribers/").status.code == 404)
    }
}
