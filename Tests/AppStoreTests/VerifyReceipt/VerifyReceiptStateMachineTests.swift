import Entitlements
import Resilience
import Testing

@testable import AppStore

private func answer(_ status: Int, retryable: Bool = false) -> VerifyReceiptStateMachine.Outcome {
    .answer(try! VerifyReceiptResponse(json: Array(#"{"status":\#(status),"is_retryable":\#(retryable)}"#.utf8)))
}

private let policy = VerifyReceiptPolicy(
    maxRetries: 3, baseDelay: .milliseconds(100), maxDelay: .milliseconds(250), attemptTimeout: .seconds(5),
    deadline: .seconds(10))

@Suite("verifyReceipt state machine")
struct VerifyReceiptStateMachineTests {
    @Test func productionFirstThenSandboxOn21007() {
        var m = VerifyReceiptStateMachine(policy: policy, now: .zero)
        #expect(m.begin() == .send(.production, after: .zero, timeout: .seconds(5)))
        #expect(
            m.received(answer(21007), now: .milliseconds(50), random: 0.5) == .send(.sandbox, after: .zero, timeout: .seconds(5)))
        guard case .finish(.valid(_, .sandbox)) = m.received(answer(0), now: .milliseconds(90), random: 0.5) else {
            Issue.record("not valid from sandbox")
            return
        }
        #expect(m.attempts == 2)
    }

    @Test func neverASecondSwitch() {
        var m = VerifyReceiptStateMachine(policy: policy, now: .zero)
        _ = m.begin()
        _ = m.received(answer(21007), now: .zero, random: 0)
        guard case .finish(.unavailable(let status, _)) = m.received(answer(21008), now: .zero, random: 0) else {
            Issue.record("a third hop")
            return
        }
        #expect(status?.rawValue == 21008)
        #expect(m.attempts == 2)
    }

    @Test func retriesBackOffWithJitterAndStopAfterMaxRetries() {
        var m = VerifyReceiptStateMachine(policy: policy, now: .zero)
        _ = m.begin()
        // Delays: base 100 ms, doubled, capped at 250 ms; half fixed, half scaled by `random`.
        #expect(
            m.received(answer(21005), now: .seconds(1), random: 0)
                == .send(.production, after: .milliseconds(50), timeout: .seconds(5)))
        #expect(
            m.received(.httpStatus(503), now: .seconds(2), random: 1)
                == .send(.production, after: .milliseconds(200), timeout: .seconds(5)))
        #expect(
            m.received(.transportFailure("reset"), now: .seconds(3), random: 0.5)
                == .send(.production, after: .milliseconds(187.5), timeout: .seconds(5)))
        guard case .finish(.unavailable(nil, let reason)) = m.received(.transportFailure("reset"), now: .seconds(4), random: 0.5)
        else {
            Issue.record("a fifth attempt")
            return
        }
        #expect(reason.contains("3 retries"))
        #expect(m.attempts == 4)
    }

    @Test func theDeadlineBoundsRetriesAndTimeouts() {
        var m = VerifyReceiptStateMachine(policy: policy, now: .seconds(100))
        _ = m.begin()
        // 8 s in: 2 s remain, so the next attempt's timeout shrinks to fit.
        #expect(
            m.received(answer(21009), now: .seconds(108), random: 0)
                == .send(.production, after: .milliseconds(50), timeout: .milliseconds(1950)))
        guard case .finish(.unavailable) = m.received(answer(21009), now: .milliseconds(109_950), random: 1) else {
            Issue.record("retried past the deadline")
            return
        }
    }

    @Test func flaggedInternalErrorsAreRetriedOnlyWithTheFlag() {
        var m = VerifyReceiptStateMachine(policy: policy, now: .zero)
        _ = m.begin()
        guard case .send = m.received(answer(21100, retryable: true), now: .zero, random: 0) else {
            Issue.record("flagged 21100 not retried")
            return
        }
        guard case .finish(.unavailable(let status, _)) = m.received(answer(21100), now: .zero, random: 0) else {
            Issue.record("unflagged 21100 retried")
            return
        }
        #expect(status?.rawValue == 21100)
    }

    @Test(arguments: [
        (21003, VerificationResult.invalidReceipt(AppleStatus(rawValue: 21003))),
        (21010, .invalidReceipt(AppleStatus(rawValue: 21010))),
        (21004, .misconfigured(AppleStatus(rawValue: 21004))),
        (21000, .unexpected(AppleStatus(rawValue: 21000))),
    ])
    func finalStatusesEndAtOnce(status: Int, result: VerificationResult) {
        var m = VerifyReceiptStateMachine(policy: policy, now: .zero)
        _ = m.begin()
        #expect(m.received(answer(status), now: .zero, random: 0) == .finish(result))
    }

    @Test func clientErrorsOtherThan429AreNotRetried() {
        var m = VerifyReceiptStateMachine(policy: policy, now: .zero)
        _ = m.begin()
        guard case .send = m.received(.httpStatus(429), now: .zero, random: 0) else {
            Issue.record("429 not retried")
            return
        }
        guard case .finish(.unavailable) = m.received(.httpStatus(403), now: .zero, random: 0) else {
            Issue.record("403 retried")
            return
        }
    }
}

/// Which failures say Apple as a whole is failing (and may feed the circuit breaker).
@Suite struct AppleWideFailureTests {
    static func lastFailure(_ outcomes: [VerifyReceiptStateMachine.Outcome]) -> Bool {
        var m = VerifyReceiptStateMachine(policy: policy, now: .zero)
        _ = m.begin()
        for outcome in outcomes {
            if case .finish = m.received(outcome, now: .zero, random: 0) { break }
        }
        return m.failureIsAppleWide
    }

    @Test func appleWide() {
        #expect(Self.lastFailure(Array(repeating: .transportFailure("timeout"), count: 4)))
        #expect(Self.lastFailure(Array(repeating: .httpStatus(503), count: 4)))
        #expect(Self.lastFailure(Array(repeating: answer(21005), count: 4)))
        #expect(Self.lastFailure(Array(repeating: answer(21100, retryable: true), count: 4)))
        #expect(Self.lastFailure([answer(21002), answer(21002), .transportFailure("reset"), .transportFailure("reset")]))
    }

    @Test func aboutTheReceiptOrUncertain() {
        #expect(!Self.lastFailure(Array(repeating: answer(21002), count: 4)))
        #expect(!Self.lastFailure([.transportFailure("reset"), answer(21002), answer(21002), answer(21002)]))
        #expect(!Self.lastFailure(Array(repeating: answer(21009), count: 4)))
        #expect(!Self.lastFailure([answer(21104)]))
        #expect(!Self.lastFailure([answer(21007), answer(21008)]))
        #expect(!Self.lastFailure(Array(repeating: .httpStatus(429), count: 4)))
        #expect(!Self.lastFailure([.httpStatus(413)]))
    }

    @Test func anInconclusiveEndNeverCountsButClosesAProbe() {
        var b = CircuitBreaker(policy: .init(failureThreshold: 2, openFor: .seconds(10)))
        for _ in 0..<10 { b.recordInconclusive(now: .zero) }
        #expect(b.state == .closed(failures: 0))
        b.record(available: false, now: .zero)
        b.recordInconclusive(now: .zero)
        #expect(b.state == .closed(failures: 1))
        b.record(available: false, now: .zero)
        #expect(b.state.name == "open")
        #expect(b.decide(now: .seconds(11)) == .probe)
        b.recordInconclusive(now: .seconds(11))
        #expect(b.state == .closed(failures: 0))
    }
}
