import Crypto
import Foundation
import JSON
import ReceiptTesting
import Testing
import WebhookSink
import Webhooks

@Suite struct WebhookSinkTests {
    static let secret = "whsec-test-0123456789abcdef"

    static func payload(version: Int = 2, user: String = "u1", type: String = "renewal") -> String {
        #"{"app_user_id":"\#(user)","created_at":"2026-11-23T10:00:00.000Z","event":{"at":"2026-11-23T09:00:00.000Z","facts":{},"id":"7","original_transaction_id":"1000","product_id":"monthly","recorded_at":"2026-11-23T10:00:00.000Z","transaction_id":"1001","type":"\#(type)"},"id":"evt_00112233445566778899aabbccddeeff","subscriber":{"aliases":[],"app_user_id":"\#(user)","entitlements":{},"non_subscriptions":{},"request_date":"2026-11-23T10:00:00.000Z","subscriptions":{},"version":\#(version)},"type":"\#(type)","version":\#(version)}"#
    }

    @Test func aWellFormedPayloadHasNoSchemaProblems() throws {
        #expect(WebhookSink.schemaProblems(try JSONValue.parse(Array(Self.payload().utf8))) == [])
    }

    @Test func schemaProblemsNameWhatIsWrong() throws {
        let wrongVersion = Self.payload().replacingOccurrences(
            of: #""type":"renewal","version":2}"#, with: #""type":"renewal","version":3}"#)
        #expect(
            WebhookSink.schemaProblems(try JSONValue.parse(Array(wrongVersion.utf8))) == ["subscriber.version is not version"])
        let unknownType = Self.payload(type: "bogus")
        #expect(WebhookSink.schemaProblems(try JSONValue.parse(Array(unknownType.utf8))).contains("type is unknown"))
        #expect(WebhookSink.schemaProblems(.array([])) == ["the payload is not an object"])
        // A merge names no purchase; every other event names one.
        let merge = Self.payload(type: "merge").replacingOccurrences(
            of: #""original_transaction_id":"1000","product_id":"monthly""#,
            with: #""original_transaction_id":null,"product_id":null"#)
        #expect(WebhookSink.schemaProblems(try JSONValue.parse(Array(merge.utf8))) == [])
        let mergeNamingAProduct = Self.payload(type: "merge")
        #expect(
            WebhookSink.schemaProblems(try JSONValue.parse(Array(mergeNamingAProduct.utf8)))
                == ["event.product_id is not null in a merge", "event.original_transaction_id is not null in a merge"])
    }

    @Test func theSinkAcknowledgesOnlyWhatVerifies() async throws {
        let sink = WebhookSink(secrets: [Self.secret])
        let served = try WebhookSink.serve(sink, logger: quietLogger)
        let body = Self.payload()
        let now = Int64(Date().timeIntervalSince1970)
        let good = WebhookSignature.header(body: Array(body.utf8), secrets: [Self.secret], timestamp: now)
        let bad = WebhookSignature.header(body: Array(body.utf8), secrets: ["another-secret-0123456789"], timestamp: now)
        let stale = WebhookSignature.header(body: Array(body.utf8), secrets: [Self.secret], timestamp: now - 3600)
        let path = "/hooks"
        #expect(try await request(served.port, "POST", path, body, headers: "Receiptd-Signature: \(good)\r\n").status == 204)
        #expect(try await request(served.port, "POST", path, body, headers: "Receiptd-Signature: \(bad)\r\n").status == 401)
        #expect(try await request(served.port, "POST", path, body, headers: "Receiptd-Signature: \(stale)\r\n").status == 401)
        sink.behaviour = .fail(status: 503)
        #expect(try await request(served.port, "POST", path, body, headers: "Receiptd-Signature: \(good)\r\n").status == 503)
        let arrivals = sink.arrivals
        #expect(arrivals.map(\.signature) == [.valid, .mismatch, .stale, .valid])
        #expect(arrivals.map(\.acknowledged) == [true, false, false, false])
        #expect(arrivals[0].version == 2 && arrivals[0].appUserID == "u1" && arrivals[0].schemaProblems.isEmpty)
        await served.stop()
    }
}

/// The Swift verifier Docs/webhooks.md prints, as printed there.
private func verify(header: String, body: [UInt8], secrets: [String], tolerance: Double = 300) -> Bool {
    let parts = header.split(separator: ",").map { $0.split(separator: "=", maxSplits: 1).map(String.init) }
    guard let t = parts.first(where: { $0.first == "t" })?.last, let seconds = Double(t),
        abs(Date().timeIntervalSince1970 - seconds) <= tolerance
    else { return false }
    let signed = Array((t + ".").utf8) + body
    return parts.filter { $0.first == "v1" }.contains { v1 in
        secrets.contains { secret in
            let mac = HMAC<SHA256>.authenticationCode(for: signed, using: SymmetricKey(data: Array(secret.utf8)))
            return mac.map { String(format: "%02x", $0) }.joined() == v1.last
        }
    }
}

@Suite struct DocumentedVerifierTests {
    @Test func theDocumentedSwiftVerifierAcceptsReceiptdsSignatures() {
        let body = Array(WebhookSinkTests.payload().utf8)
        let now = Int64(Date().timeIntervalSince1970)
        let header = WebhookSignature.header(body: body, secrets: ["new-secret-0123456", "old-secret-0123456"], timestamp: now)
        #expect(verify(header: header, body: body, secrets: ["old-secret-0123456"]))
        #expect(!verify(header: header, body: body + [0x20], secrets: ["old-secret-0123456"]))
        #expect(!verify(header: header, body: body, secrets: ["another-secret-000"]))
        let old = WebhookSignature.header(body: body, secrets: ["old-secret-0123456"], timestamp: now - 600)
        #expect(!verify(header: old, body: body, secrets: ["old-secret-0123456"]))
    }
}
