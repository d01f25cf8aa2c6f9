import Foundation
import HTTPServer
import Testing

@testable import http_inspect

private func answer(_ responder: some HTTPResponder, _ request: HTTPRequest) async -> HTTPResponse {
    let context = RequestContext(requestID: "t-1", remoteAddress: "127.0.0.1")
    switch responder.handler(for: request) {
    case .immediate(let handle): return handle(request, context)
    case .task(let handle): return await handle(request, context)
    case .immediateOrTask(let immediate, let task):
        if let response = immediate(request, context) { return response }
        return await task(request, context)
    }
}

private func decode(_ base64: Any?) -> String? {
    (base64 as? String).flatMap { Data(base64Encoded: $0) }.map { String(decoding: $0, as: UTF8.self) }
}

@Suite("http-inspect responders")
struct RespondersTests {
    @Test func inspectReportsEveryPartInBase64() async throws {
        let request = HTTPRequest(
            method: .post, target: "/a/b?c=d", version: .http1_0,
            headers: ["Host": "x", "X-Dup": "1", "x-dup": "2 3"], body: Array("{\"k\":\"é\"}".utf8))
        let response = await answer(InspectResponder(), request)
        #expect(response.status == .ok)
        #expect(response.headers[first: "Content-Type"] == "application/json")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any])
        #expect(Set(json.keys) == ["method", "uri", "version", "headers", "body"])
        #expect(decode(json["method"]) == "POST")
        #expect(decode(json["uri"]) == "/a/b?c=d")
        #expect(decode(json["version"]) == "HTTP/1.0")
        #expect(decode(json["body"]) == "{\"k\":\"é\"}")
        let headers = try #require(json["headers"] as? [[String]])
        #expect(headers.map { $0.map { decode($0)! } } == [["Host", "x"], ["X-Dup", "1"], ["x-dup", "2 3"]])
    }

    @Test func echoAnswersTheBodyForAnyMethodAndPath() async {
        for (method, target) in [(HTTPMethod.delete, "/anything"), (.options, "*"), (.get, "/")] {
            let response = await answer(EchoResponder(), HTTPRequest(method: method, target: target, body: [0, 1, 2, 255]))
            #expect(response.status == .ok)
            #expect(response.body == [0, 1, 2, 255])
        }
    }

    @Test func benchJSONEchoesAndRefusesBadJSON() async {
        let router = BenchRoutes.router()
        let body = Array(#"{"user_id":"u","product_id":"p","receipt_data":"r"}"#.utf8)
        let ok = await answer(
            router, HTTPRequest(method: .post, target: "/echo", headers: ["Content-Type": "application/json"], body: body))
        #expect(ok.status == .ok)
        #expect(String(decoding: ok.body, as: UTF8.self).contains(#""received_bytes":\#(body.count)"#))
        let bad = await answer(
            router, HTTPRequest(method: .post, target: "/echo", headers: ["Content-Type": "application/json"], body: [0x7B]))
        #expect(bad.status == .badRequest)
    }
}
