import Synchronization

/// Stops asking Apple while Apple is down: after `failureThreshold` verifications in a
/// row end `unavailable`, the breaker opens and verifications fail fast, without a call, until
/// `openFor` has passed; then one probe goes through (half-open). A probe that Apple answers
/// closes the breaker; one that fails opens it again for twice as long, up to `maxOpenFor`.
/// Pure: time is a monotonic reading handed in.
package struct CircuitBreaker: Sendable, Equatable {
    package struct Policy: Sendable, Equatable {
        package var failureThreshold: Int
        package var openFor: Duration
        package var maxOpenFor: Duration

        package init(failureThreshold: Int = 5, openFor: Duration = .seconds(30), maxOpenFor: Duration = .seconds(300)) {
            self.failureThreshold = failureThreshold
            self.openFor = openFor
            self.maxOpenFor = maxOpenFor
        }
    }

    package enum State: Sendable, Equatable {
        /// Calls go through; `failures` counts unavailable verifications in a row.
        case closed(failures: Int)
        /// No calls until `until`; `backoff` is how long this opening lasts.
        case open(until: Duration, backoff: Duration)
        /// One probe is out; everything else fails fast until it ends.
        case halfOpen(backoff: Duration)

        package var name: String {
            switch self {
            case .closed: "closed"
            case .open: "open"
            case .halfOpen: "half_open"
            }
        }
    }

    /// Whether a verification may call Apple.
    package enum Decision: Sendable, Equatable {
        case allow
        /// The one call that tests whether Apple is back.
        case probe
        /// Fail fast; Apple may be tried again after `retryAfter`.
        case reject(retryAfter: Duration)
    }

    package let policy: Policy
    package private(set) var state: State = .closed(failures: 0)

    package init(policy: Policy = Policy()) { self.policy = policy }

    package mutating func decide(now: Duration) -> Decision {
        switch state {
        case .closed:
            return .allow
        case .open(let until, let backoff):
            guard now >= until else { return .reject(retryAfter: until - now) }
            state = .halfOpen(backoff: backoff)
            return .probe
        case .halfOpen:
            return .reject(retryAfter: .seconds(1))
        }
    }

    /// A verification ended unavailable for a reason that says nothing certain about Apple as a
    /// whole (21002 after retries, say): the failure count is left alone, so such answers can
    /// never open the breaker. A probe that ends this way did reach Apple, which answered: closed.
    @discardableResult
    package mutating func recordInconclusive(now: Duration) -> State? {
        guard case .halfOpen = state else { return nil }
        return record(available: true, now: now)
    }

    /// Records how a verification that was allowed ended: `available` when Apple answered at all
    /// (valid or not), false when it ended unavailable for a reason that concerns Apple as a whole
    /// (``VerifyReceiptStateMachine/failureIsAppleWide``). Returns the new state when it changed.
    @discardableResult
    package mutating func record(available: Bool, now: Duration) -> State? {
        let before = state
        switch (state, available) {
        case (_, true):
            state = .closed(failures: 0)
        case (.closed(let failures), false):
            state =
                failures + 1 >= policy.failureThreshold
                ? .open(until: now + policy.openFor, backoff: policy.openFor) : .closed(failures: failures + 1)
        case (.halfOpen(let backoff), false):
            let next = min(backoff * 2, policy.maxOpenFor)
            state = .open(until: now + next, backoff: next)
        case (.open, false):
            break  // a call started before the breaker opened: it already counts as open
        }
        guard state != before else { return nil }
        if case .closed = state, case .closed = before { return nil }  // only the count moved
        return state
    }
}

/// A ``CircuitBreaker`` shared by every verification, reporting each change of state.
package final class SharedCircuitBreaker: Sendable {
    private let breaker: Mutex<CircuitBreaker>
    private let onChange: @Sendable (CircuitBreaker.State) -> Void

    package init(policy: CircuitBreaker.Policy, onChange: @escaping @Sendable (CircuitBreaker.State) -> Void = { _ in }) {
        breaker = Mutex(CircuitBreaker(policy: policy))
        self.onChange = onChange
    }

    package func decide(now: Duration) -> CircuitBreaker.Decision {
        let (decision, state) = breaker.withLock { b in (b.decide(now: now), b.state) }
        if decision == .probe { onChange(state) }
        return decision
    }

    package func record(available: Bool, now: Duration) {
        if let changed = breaker.withLock({ $0.record(available: available, now: now) }) { onChange(changed) }
    }

    package func recordInconclusive(now: Duration) {
        if let changed = breaker.withLock({ $0.recordInconclusive(now: now) }) { onChange(changed) }
    }

    package var state: CircuitBreaker.State { breaker.withLock { $0.state } }

    /// While open: the time until the next probe.
    package func retryAfter(now: Duration) -> Duration? {
        guard case .open(let until, _) = state else { return nil }
        return max(.zero, until - now)
    }
}
