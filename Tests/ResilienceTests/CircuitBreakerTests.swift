import Testing

@testable import Resilience

@Suite("Circuit breaker")
struct CircuitBreakerTests {
    let policy = CircuitBreaker.Policy(failureThreshold: 3, openFor: .seconds(10), maxOpenFor: .seconds(35))

    @Test func opensAfterTheThresholdOfUnavailableVerificationsInARow() {
        var b = CircuitBreaker(policy: policy)
        #expect(b.decide(now: .zero) == .allow)
        #expect(b.record(available: false, now: .seconds(1)) == nil)
        #expect(b.record(available: true, now: .seconds(2)) == nil)  // an answer resets the count
        b.record(available: false, now: .seconds(3))
        b.record(available: false, now: .seconds(4))
        #expect(b.record(available: false, now: .seconds(5)) == .open(until: .seconds(15), backoff: .seconds(10)))
        #expect(b.decide(now: .seconds(6)) == .reject(retryAfter: .seconds(9)))
    }

    @Test func halfOpenLetsOneProbeThroughAndItsOutcomeDecides() {
        var b = CircuitBreaker(policy: policy)
        for t in 1...3 { b.record(available: false, now: .seconds(t)) }  // open until 13
        #expect(b.decide(now: .seconds(13)) == .probe)
        #expect(b.state == .halfOpen(backoff: .seconds(10)))
        #expect(b.decide(now: .seconds(13)) == .reject(retryAfter: .seconds(1)))  // only one probe at a time
        // The probe fails: open again, twice as long.
        #expect(b.record(available: false, now: .seconds(14)) == .open(until: .seconds(34), backoff: .seconds(20)))
        #expect(b.decide(now: .seconds(34)) == .probe)
        // Fails again: doubling stops at maxOpenFor.
        #expect(b.record(available: false, now: .seconds(35)) == .open(until: .seconds(70), backoff: .seconds(35)))
        #expect(b.decide(now: .seconds(70)) == .probe)
        #expect(b.record(available: true, now: .seconds(71)) == .closed(failures: 0))
        #expect(b.decide(now: .seconds(71)) == .allow)
    }

    @Test func callsStartedBeforeTheOpeningDoNotExtendIt() {
        var b = CircuitBreaker(policy: policy)
        for t in 1...3 { b.record(available: false, now: .seconds(t)) }
        #expect(b.record(available: false, now: .seconds(4)) == nil)
        #expect(b.state == .open(until: .seconds(13), backoff: .seconds(10)))
        // …but one that Apple answered shows Apple is back.
        #expect(b.record(available: true, now: .seconds(5)) == .closed(failures: 0))
    }
}
