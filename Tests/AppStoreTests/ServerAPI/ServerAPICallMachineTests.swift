import Entitlements
import Testing

@testable import AppStore

@Suite("App Store Server API call machine")
struct ServerAPICallMachineTests {
    static let policy = ServerAPIRetryPolicy(
        maxRetries: 3, baseDelay: .milliseconds(200), maxDelay: .seconds(2), attemptTimeout: .seconds(10), deadline: .seconds(20))

    static func error(_ status: Int, _ code: Int64?, retryAfterMs: Int64? = nil) -> ServerAPICallMachine.Exchange {
        .http(
            status: status, body: [], error: code.map { ServerAPIError(code: $0, message: "m") }, retryAfterMs: retryAfterMs)
    }
    static let ok = ServerAPICallMachine.Exchange.http(status: 200, body: Array("{}".utf8), error: nil, retryAfterMs: nil)

    @Test func anIDUnknownInProductionIsAskedOfSandboxOnce() {
        for notFound in [Self.error(404, 4_040_010), Self.error(404, nil)] {
            var m = ServerAPICallMachine(policy: Self.policy, now: .zero)
            #expect(m.begin() == .send(.production, after: .zero, timeout: .seconds(10)))
            #expect(
                m.received(notFound, now: .seconds(1), wallNowMs: 0, random: 0)
                    == .send(.sandbox, after: .zero, timeout: .seconds(10)))
            #expect(m.received(notFound, now: .seconds(2), wallNowMs: 0, random: 0) == .finish(.failure(.notFound)))
            #expect(m.attempts == 2)
        }
        var answered = ServerAPICallMachine(policy: Self.policy, now: .zero)
        _ = answered.begin()
        _ = answered.received(Self.error(404, 4_040_010), now: .zero, wallNowMs: 0, random: 0)
        #expect(
            answered.received(Self.ok, now: .zero, wallNowMs: 0, random: 0)
                == .finish(.success(ServerAPIAnswer(body: Array("{}".utf8), environment: .sandbox))))
    }

    @Test func noSwitchWhenTheCallNamesNoTransactionOrStartsInSandbox() {
        var m = ServerAPICallMachine(policy: Self.policy, now: .zero, switchesToSandbox: false)
        _ = m.begin()
        #expect(m.received(Self.error(404, 4_040_010), now: .zero, wallNowMs: 0, random: 0) == .finish(.failure(.notFound)))
        var s = ServerAPICallMachine(policy: Self.policy, now: .zero, first: .sandbox)
        #expect(s.begin() == .send(.sandbox, after: .zero, timeout: .seconds(10)))
        #expect(s.received(Self.error(404, 4_040_010), now: .zero, wallNowMs: 0, random: 0) == .finish(.failure(.notFound)))
    }

    @Test(arguments: [
        error(404, 4_040_002), error(404, 4_040_004), error(404, 4_040_006), error(500, 5_000_001), error(500, nil),
        error(503, nil), .failure("reset"),
    ])
    func retryableAnswersAreRetriedWithBackoffUntilRetriesRunOut(_ exchange: ServerAPICallMachine.Exchange) {
        var m = ServerAPICallMachine(policy: Self.policy, now: .zero)
        _ = m.begin()
        // random 1.0: the full exponential ceiling, 200, 400, 800 ms.
        var now = Duration.zero
        for expected in [200, 400, 800] {
            #expect(
                m.received(exchange, now: now, wallNowMs: 0, random: 1)
                    == .send(.production, after: .milliseconds(expected), timeout: .seconds(10)))
            now += .milliseconds(expected)
        }
        guard case .finish(.failure(.unavailable(_, nil))) = m.received(exchange, now: now, wallNowMs: 0, random: 1) else {
            Issue.record("not unavailable after the retries")
            return
        }
        #expect(m.attempts == 4)
        var recovers = ServerAPICallMachine(policy: Self.policy, now: .zero)
        _ = recovers.begin()
        _ = recovers.received(exchange, now: .zero, wallNowMs: 0, random: 0.5)
        guard case .finish(.success) = recovers.received(Self.ok, now: .seconds(1), wallNowMs: 0, random: 0) else {
            Issue.record("a retry that succeeds is not a success")
            return
        }
    }

    @Test func a429WaitsUntilRetryAfterAUnixTimeInMilliseconds() {
        var m = ServerAPICallMachine(policy: Self.policy, now: .zero)
        _ = m.begin()
        let wall: Int64 = 1_700_000_000_000
        #expect(
            m.received(Self.error(429, 4_290_000, retryAfterMs: wall + 1_500), now: .seconds(1), wallNowMs: wall, random: 0)
                == .send(.production, after: .milliseconds(1_500), timeout: .seconds(10)))
        // One beyond the deadline is not waited for: the caller learns when to come back.
        #expect(
            m.received(Self.error(429, 4_290_000, retryAfterMs: wall + 60_000), now: .seconds(3), wallNowMs: wall, random: 0)
                == .finish(.failure(.unavailable(reason: "rate limited (429)", retryAfter: .seconds(60)))))
    }

    @Test func whatNoRetryChangesEndsAtOnce() {
        let cases: [(ServerAPICallMachine.Exchange, ServerAPIFailure)] = [
            (Self.error(401, nil), .unauthorized(status: 401)),
            (Self.error(403, nil), .unauthorized(status: 403)),
            (Self.error(400, 4_000_006), .invalidTransactionID),
            (Self.error(400, 4_000_000), .rejected(status: 400, error: ServerAPIError(code: 4_000_000, message: "m"))),
            (Self.error(404, 4_040_005), .rejected(status: 404, error: ServerAPIError(code: 4_040_005, message: "m"))),
        ]
        for (exchange, failure) in cases {
            var m = ServerAPICallMachine(policy: Self.policy, now: .zero)
            _ = m.begin()
            #expect(m.received(exchange, now: .zero, wallNowMs: 0, random: 0) == .finish(.failure(failure)))
            #expect(m.attempts == 1)
        }
    }

    @Test func theDeadlineBoundsRetriesAndEachAttemptsTimeout() {
        let tight = ServerAPIRetryPolicy(
            maxRetries: 10, baseDelay: .seconds(1), maxDelay: .seconds(4), attemptTimeout: .seconds(10), deadline: .seconds(5))
        var m = ServerAPICallMachine(policy: tight, now: .zero)
        #expect(m.begin() == .send(.production, after: .zero, timeout: .seconds(5)))
        #expect(
            m.received(.failure("timeout"), now: .seconds(2), wallNowMs: 0, random: 1)
                == .send(.production, after: .seconds(1), timeout: .seconds(2)))
        guard case .finish(.failure(.unavailable)) = m.received(.failure("timeout"), now: .seconds(4), wallNowMs: 0, random: 1)
        else {
            Issue.record("retried past the deadline")
            return
        }
        #expect(m.failureIsAppleWide)
    }
}
