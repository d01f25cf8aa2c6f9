package import Entitlements

/// The decisions of one verification, free of I/O: which environment to ask, whether and when to
/// ask again, and what the answer finally is. The client runs the returned actions; time and
/// randomness come in as arguments so tests can replay any schedule.
///
/// Rules (Docs/apple-protocols.md §1.2–1.3): production first; 21007 → sandbox and 21008 → production
/// at once, at most one switch per verification; 21002, 21005, 21009, transport errors, HTTP 5xx
/// and 429 are retried with jittered exponential backoff while retries and the deadline last;
/// 21100–21199 only when the answer's retry flag is set.
package struct VerifyReceiptStateMachine: Sendable {
    /// What came back from one exchange.
    package enum Outcome: Sendable {
        /// Apple answered with JSON and a status.
        case answer(VerifyReceiptResponse)
        /// An HTTP status other than 2xx (Apple's body, if any, is not needed).
        case httpStatus(Int)
        /// No answer: connect or TLS failure, timeout, reset, a body too large or not JSON.
        case transportFailure(String)
    }

    package enum Action: Sendable, Equatable {
        /// Send the request to `environment`, waiting `after` first, giving it `timeout`.
        case send(StoreEnvironment, after: Duration, timeout: Duration)
        case finish(VerificationResult)
    }

    package let policy: VerifyReceiptPolicy
    private let start: Duration
    private var environment: StoreEnvironment = .production
    private var switched = false
    private var retries = 0
    package private(set) var attempts = 0
    /// Whether the last failure says Apple as a whole is failing (no answer, a timeout, HTTP 5xx,
    /// 21005, a 211xx flagged retryable) rather than something about this receipt or nothing
    /// certain (21002, which Apple also sends for malformed receipt data; 21009; an unflagged
    /// 211xx; an environment loop; another HTTP status). Only the first kind may feed the circuit
    /// breaker: a stranger with the public key can post receipts Apple answers 21002, but cannot
    /// make Apple time out.
    package private(set) var failureIsAppleWide = false

    /// `now` is any monotonic reading, e.g. `ContinuousClock.now - origin`.
    package init(policy: VerifyReceiptPolicy, now: Duration) {
        self.policy = policy
        self.start = now
    }

    /// The first action: production, at once.
    package mutating func begin() -> Action {
        attempts = 1
        return .send(.production, after: .zero, timeout: min(policy.attemptTimeout, policy.deadline))
    }

    /// The next action after an exchange ended at `now`. `random` is uniform in 0..<1 (jitter).
    package mutating func received(_ outcome: Outcome, now: Duration, random: Double) -> Action {
        switch outcome {
        case .answer(let response):
            switch response.status.disposition {
            case .valid:
                return .finish(.valid(response, environment))
            case .switchEnvironment(let other):
                failureIsAppleWide = false
                guard !switched else {
                    return .finish(
                        .unavailable(status: response.status, reason: "both environments sent the receipt to the other"))
                }
                switched = true
                environment = other
                return send(after: .zero, now: now)
            case .retryable:
                failureIsAppleWide = response.status == .serverUnavailable
                return retry(now: now, random: random, status: response.status, reason: "Apple asked to try again")
            case .retryableIfFlagged:
                failureIsAppleWide = response.isRetryable
                guard response.isRetryable else {
                    return .finish(.unavailable(status: response.status, reason: "an internal error at Apple, not retryable"))
                }
                return retry(now: now, random: random, status: response.status, reason: "Apple asked to try again")
            case .invalidReceipt:
                return .finish(.invalidReceipt(response.status))
            case .misconfigured:
                return .finish(.misconfigured(response.status))
            case .unexpected:
                return .finish(.unexpected(response.status))
            }
        case .httpStatus(let code):
            failureIsAppleWide = code >= 500
            guard code >= 500 || code == 429 else {
                return .finish(.unavailable(status: nil, reason: "Apple answered HTTP \(code)"))
            }
            return retry(now: now, random: random, status: nil, reason: "Apple answered HTTP \(code)")
        case .transportFailure(let reason):
            failureIsAppleWide = true
            return retry(now: now, random: random, status: nil, reason: reason)
        }
    }

    private mutating func retry(now: Duration, random: Double, status: AppleStatus?, reason: String) -> Action {
        guard retries < policy.maxRetries else {
            return .finish(.unavailable(status: status, reason: "\(reason); \(retries) retries used"))
        }
        retries += 1
        // Exponential backoff with "equal jitter": half fixed, half random, capped.
        var delay = policy.baseDelay
        for _ in 1..<retries { delay = min(delay * 2, policy.maxDelay) }
        delay = min(delay, policy.maxDelay)
        let jittered = delay / 2 + delay / 2 * max(0, min(random, 1))
        let remaining = policy.deadline - (now - start)
        guard jittered < remaining else {
            return .finish(.unavailable(status: status, reason: "\(reason); the deadline has passed"))
        }
        return send(after: jittered, now: now)
    }

    private mutating func send(after delay: Duration, now: Duration) -> Action {
        let remaining = policy.deadline - (now - start) - delay
        guard remaining > .zero else {
            failureIsAppleWide = true  // the time went to Apple's exchanges
            return .finish(.unavailable(status: nil, reason: "the deadline has passed"))
        }
        attempts += 1
        return .send(environment, after: delay, timeout: min(policy.attemptTimeout, remaining))
    }
}

/// How a verification ended.
package enum VerificationResult: Sendable, Equatable {
    /// Status 0 (or 21006) from `environment`.
    case valid(VerifyReceiptResponse, StoreEnvironment)
    /// 21003 or 21010: the receipt does not prove a purchase.
    case invalidReceipt(AppleStatus)
    /// 21004: the shared secret is wrong; an operator must fix the configuration.
    case misconfigured(AppleStatus)
    /// Apple could not answer usefully now (retries or deadline exhausted, non-retryable 211xx,
    /// an environment loop): try later; nothing stored may be revoked for this.
    case unavailable(status: AppleStatus?, reason: String)
    /// A status Apple should never send for a well-formed request (21000, 21001, unknown).
    case unexpected(AppleStatus)
}
