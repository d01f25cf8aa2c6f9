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
        let limits = RateLimiter.Settings(perKey: 1000, keyBurst: 1000, perAddress: 1, addressBurst: 2)
        let configuration = { (path: String) in testConfiguration(path: path, limits: limits) }
        try await withClockedService(configuration: configuration) { _, port, _, clock in
            let post = { try await postReceipt(port, user: "rita", "active_monthly:r") }
            #expect(try await post().status == 200)
            #expect(try await post().status == 200)
            let limited = try await post()
            #expect(limited.status == 429 && limited.errorCode == "rate_limited", "\(limited.body)")
            #expect(limited.head.lowercased().contains("retry-after: 1"))
            // Reads are not limited.
            #expect(try await subscriber(port, "rita").status == 200)
            // The limiter reads the service's clock: a second later there is a token again.
            clock.advance(by: 999)
            #expect(try await post().status == 429)
            clock.advance(by: 1)
            #expect(try await post().status == 200)
        }
    }
}
