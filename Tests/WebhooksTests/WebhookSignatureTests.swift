import Foundation
import Testing

@testable import Webhooks

@Suite struct WebhookSignatureTests {
    let body = Array(#"{"id":"evt_1"}"#.utf8)

    @Test func theHeaderIsTheHMACOfTheTimeAndTheBody() {
        // HMAC-SHA256("secret-0123456789", "1790000000.{\"id\":\"evt_1\"}"), from Python's hmac module.
        let header = WebhookSignature.header(body: body, secrets: ["secret-0123456789"], timestamp: 1_790_000_000)
        #expect(header == "t=1790000000,v1=f0d76a4c61b60a1aac3f933d358d182eb9f75936c1fee59c3ad2e4d562f2ef0e")
    }

    @Test func twoSecretsSignTwiceAndEitherVerifies() {
        let header = WebhookSignature.header(body: body, secrets: ["new-secret-0123456", "old-secret-0123456"], timestamp: 100)
        #expect(header.split(separator: ",").count == 3)
        for receiver in [["new-secret-0123456"], ["old-secret-0123456"], ["other-secret-01234", "old-secret-0123456"]] {
            #expect(WebhookSignature.verify(header: header, body: body, secrets: receiver, now: 100) == .valid)
        }
        #expect(WebhookSignature.verify(header: header, body: body, secrets: ["other-secret-01234"], now: 100) == .mismatch)
    }

    @Test func aChangedBodyOrTimeDoesNotVerify() {
        let header = WebhookSignature.header(body: body, secrets: ["s-0123456789abcdef"], timestamp: 100)
        #expect(
            WebhookSignature.verify(header: header, body: body + [0x20], secrets: ["s-0123456789abcdef"], now: 100) == .mismatch)
        let moved = header.replacingOccurrences(of: "t=100", with: "t=101")
        #expect(WebhookSignature.verify(header: moved, body: body, secrets: ["s-0123456789abcdef"], now: 100) == .mismatch)
    }

    @Test func anOldTimestampIsStaleEvenWhenTheMACMatches() {
        let header = WebhookSignature.header(body: body, secrets: ["s-0123456789abcdef"], timestamp: 100)
        #expect(WebhookSignature.verify(header: header, body: body, secrets: ["s-0123456789abcdef"], now: 400) == .valid)
        #expect(WebhookSignature.verify(header: header, body: body, secrets: ["s-0123456789abcdef"], now: 401) == .stale)
        #expect(
            WebhookSignature.verify(header: header, body: body, secrets: ["s-0123456789abcdef"], now: 401, tolerance: 301)
                == .valid)
    }

    @Test func malformedHeadersAreNamedSo() {
        for header in [
            "", "t=1", "v1=00", "t=x,v1=" + String(repeating: "0", count: 64), "t=1,v1=zz",
            "t=1,t=2,v1=" + String(repeating: "0", count: 64), "garbage",
        ] {
            #expect(WebhookSignature.verify(header: header, body: body, secrets: ["s"], now: 1) == .malformed, "\(header)")
        }
        // An unknown scheme beside v1 is ignored.
        let header = WebhookSignature.header(body: body, secrets: ["s-0123456789abcdef"], timestamp: 5) + ",v2=abc"
        #expect(WebhookSignature.verify(header: header, body: body, secrets: ["s-0123456789abcdef"], now: 5) == .valid)
    }
}

@Suite struct WebhookRetryPolicyTests {
    let policy = WebhookRetryPolicy()

    @Test func delaysDoubleFrom30SecondsUpTo6Hours() {
        #expect(
            (1...12).map { policy.delay(afterAttempt: $0) / 1000 } == [
                30, 60, 120, 240, 480, 960, 1920, 3840, 7680, 15360, 21600, 21600,
            ])
    }

    @Test func jitterDrawsInTheUpperHalf() {
        #expect(policy.retryAt(afterAttempt: 1, firstAttemptAt: 0, now: 1000, random: 0) == 31_000)
        #expect(policy.retryAt(afterAttempt: 1, firstAttemptAt: 0, now: 1000, random: 0.999_999) == 16_001)
        #expect(policy.retryAt(afterAttempt: 3, firstAttemptAt: 0, now: 0, random: 0.5) == 90_000)
    }

    @Test func theLastAttemptIsAtTheDeadlineThenItGivesUp() {
        let deadline: Int64 = 3 * 86_400_000
        #expect(policy.retryAt(afterAttempt: 20, firstAttemptAt: 0, now: deadline - 1000, random: 0) == deadline)
        #expect(policy.retryAt(afterAttempt: 21, firstAttemptAt: 0, now: deadline, random: 0) == nil)
        // 3 days of attempts: 10 doubling from 30 s (8.5 h in all), 10 more 6 h apart, one at the deadline.
        var (now, attempt): (Int64, Int) = (0, 1)
        while let next = policy.retryAt(afterAttempt: attempt, firstAttemptAt: 0, now: now, random: 0) {
            (now, attempt) = (next, attempt + 1)
        }
        #expect(attempt == 22 && now == deadline)
    }
}
