import Foundation
import ReceiptTesting
import Testing

@testable import ReceiptCore
@testable import ReceiptService

@Suite("Rate limits")
struct RateLimitsTests {
    @Test func aBucketAllowsItsBurstThenItsRate() {
        var b = TokenBuckets(rate: 2, burst: 3)
        #expect((0..<3).map { _ in b.take("k", now: 0) } == [nil, nil, nil])
        #expect(b.take("k", now: 0) == 500)  // the next token in half a second
        #expect(b.take("other", now: 0) == nil)  // keys are independent
        #expect(b.take("k", now: 499) == 2)
        #expect(b.take("k", now: 500) == nil)
        #expect(b.take("k", now: 10_000) == nil)  // refilled, never past the burst
        #expect((0..<2).map { _ in b.take("k", now: 10_000) } == [nil, nil])
        #expect(b.take("k", now: 10_000) != nil)
    }

    @Test func bucketsAreBoundedByForgettingFullOnes() {
        var b = TokenBuckets(rate: 1, burst: 1, maxKeys: 100)
        for i in 0..<1000 { _ = b.take("k\(i)", now: Int64(i) * 2000) }  // each full again by the next
        #expect(b.count <= 100)
    }

    @Test func the429SaysWhenToComeBackAndOtherAddressesAndKeysAreNotHeldUp() async throws {
        try await withService(limits: .init(perKey: 1000, keyBurst: 1000, perAddress: 1, addressBurst: 2)) { port, _ in
            let receipt = Data("active_monthly:r".utf8).base64EncodedString()
            let body = #"{"app_user_id":"rita","receipt_data":"\#(receipt)"}"#
            func post() async throws -> (status: Int, body: String, head: String) {
                try await send(
                    port,
                    "POST /v1/receipts HTTP/1.1\r\nHost: t\r\nConnection: close\r\nAuthorization: Bearer \(TestSecrets.publicKey)\r\n"
                        + "Content-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)")
            }
            #expect(try await post().status == 200)
            #expect(try await post().status == 200)
            let limited = try await post()
            #expect(limited.status == 429 && limited.body.contains(#""code":"rate_limited""#), "\(limited.body)")
            #expect(limited.head.lowercased().contains("retry-after: 1"))
            // Reads are not limited.
            let read = try await send(
                port,
                "GET /v1/subscribers/rita HTTP/1.1\r\nHost: t\r\nConnection: close\r\nAuthorization: Bearer \(TestSecrets.secretKey)\r\n\r\n"
            )
            #expect(read.status == 200)
            try await Task.sleep(for: .milliseconds(1100))
            #expect(try await post().status == 200)
        }
    }
}
