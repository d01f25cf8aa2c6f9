import Entitlements
import Testing

@testable import AppStore

@Suite("App Store Server API rate limiter")
struct ServerAPIRateLimiterTests {
    @Test func aBucketHandsOutItsBurstThenOnePerIntervalAndRefills() {
        var bucket = TokenBucket(rate: 50, burst: 50, now: .zero)
        for _ in 0..<50 { #expect(bucket.take(now: .zero) == .zero) }
        #expect(bucket.take(now: .zero) == .milliseconds(20))
        #expect(bucket.take(now: .zero) == .milliseconds(40))
        // A second later the debt is repaid and 48 tokens are back.
        for _ in 0..<48 { #expect(bucket.take(now: .seconds(1)) == .zero) }
        #expect(bucket.take(now: .seconds(1)) > .zero)
    }

    @Test func aHoldDelaysEveryTokenUntilItEnds() {
        var bucket = TokenBucket(rate: 50, burst: 50, now: .zero)
        bucket.hold(until: .seconds(3))
        #expect(bucket.take(now: .seconds(1)) == .seconds(2))
        #expect(bucket.take(now: .seconds(3)) == .zero)
    }

    @Test func limitsArePerAppEndpointAndEnvironmentAtApplesRatesSandboxATenth() {
        let limiter = ServerAPIRateLimiter()
        func burst(_ bundle: String, _ endpoint: ServerAPIEndpoint, _ environment: StoreEnvironment) -> Int {
            var n = 0
            while limiter.reserve(bundleID: bundle, endpoint: endpoint, environment: environment, now: .zero) == .zero { n += 1 }
            return n
        }
        #expect(burst("a", .transactionHistory, .production) == 50)
        #expect(burst("a", .transactionHistory, .sandbox) == 5)
        #expect(burst("b", .transactionHistory, .production) == 50)
        #expect(burst("a", .extendRenewalDate, .production) == 20)
        #expect(burst("a", .lookUpOrderID, .production) == 10)
        #expect(burst("a", .refundHistory, .production) == 10)
        #expect(burst("a", .requestTestNotification, .production) == 1)
        #expect(burst("a", .requestTestNotification, .sandbox) == 1)  // a burst of at least one
        #expect(
            limiter.reserve(bundleID: "a", endpoint: .requestTestNotification, environment: .sandbox, now: .zero) == .seconds(20))
    }
}
