package import Entitlements

/// Bounds on one call: the same as verifyReceipt's (retries, backoff, per-attempt timeout and a
/// deadline that includes waits for the rate limiter and a 429's `Retry-After`).
package typealias ServerAPIRetryPolicy = VerifyReceiptPolicy

/// Apple's error codes the call machine acts on (§4.4).
package enum ServerAPIErrorCode {
    /// Retryable, beside 429's `4290000`: account, app and original transaction not found yet,
    /// and a general internal error.
    package static let retryable: Set<Int64> = [4_040_002, 4_040_004, 4_040_006, 5_000_001]
    /// A transaction id unknown in the environment asked.
    package static let transactionIDNotFound: Int64 = 4_040_010
    package static let invalidTransactionID: Int64 = 4_000_006
    package static let rateLimitExceeded: Int64 = 4_290_000
}

/// A 2xx answer's body and the environment that gave it.
package struct ServerAPIAnswer: Sendable, Equatable {
    package var body: [UInt8]
    package var environment: StoreEnvironment
}

/// Why a call to the App Store Server API brought no usable answer: the client's one error type.
package enum ServerAPIFailure: Error, Sendable, Equatable, CustomStringConvertible {
    /// The id is unknown in every environment asked (`4040010`, or a 404 with no error body).
    case notFound
    /// `4000006`: not a transaction id Apple could ever know.
    case invalidTransactionID
    /// Never sent: the id has not the format of its kind (``AppleIdentifier``), so it could name
    /// nothing at Apple, and in a path it could name another endpoint.
    case invalidIdentifier(AppleIdentifier.Kind)
    /// 401 (a bad key, key id or issuer id) or 403: nothing a retry changes.
    case unauthorized(status: Int)
    /// Another 4xx: the request was wrong (Apple's `errorCode` and `errorMessage` when sent).
    case rejected(status: Int, error: ServerAPIError?)
    /// Apple could not answer in time: retryable codes, 5xx, 429 or no answer until the deadline.
    /// `retryAfter`: when Apple said it may be asked again (429), else nil.
    case unavailable(reason: String, retryAfter: Duration?)
    /// A 2xx whose body is not the documented JSON.
    case badAnswer(String)
    /// A signed payload in the answer failed verification (forged, expired, another app's).
    case signedData(SignedDataError)

    package var description: String {
        switch self {
        case .notFound: "transaction id not found (4040010)"
        case .invalidTransactionID: "invalid transaction id (4000006)"
        case .invalidIdentifier(let kind): "not an Apple \(kind.rawValue); not sent"
        case .unauthorized(0): "not sent: no In-App Purchase key for the app's account"
        case .unauthorized(let status): "HTTP \(status): the In-App Purchase key, key id or issuer id is wrong"
        case .rejected(let status, let error):
            "HTTP \(status)" + (error.map { ": \($0.code) \($0.message)" } ?? "")
        case .unavailable(let reason, _): "unavailable: \(reason)"
        case .badAnswer(let reason): "malformed answer: \(reason)"
        case .signedData(let error): "signed data refused: \(error.code): \(error)"
        }
    }
}

/// Apple's error body, `{"errorCode": 4040010, "errorMessage": "..."}` (§4.4).
package struct ServerAPIError: Sendable, Equatable {
    package var code: Int64
    package var message: String

    package init(code: Int64, message: String) {
        self.code = code
        self.message = message
    }
}

/// The decisions of one App Store Server API call, free of I/O (Docs/apple-protocols.md §4.3–4.4):
/// which environment to ask, whether and when to ask again, and how the call ends. The client runs
/// the returned actions; time and randomness come in as arguments, so a test replays any schedule.
///
/// Rules: production first. A transaction id production does not know (`4040010`, or a 404 with
/// no error body) is asked of sandbox once, like verifyReceipt's 21007. The retryable codes
/// (`4040002`, `4040004`, `4040006`, `5000001`), HTTP 5xx and no answer at all are retried with
/// jittered exponential backoff while retries and the deadline last; a 429 waits until its
/// `Retry-After` (a UNIX time in ms) when that falls within the deadline. 401 is a bad key.
package struct ServerAPICallMachine: Sendable {
    /// What one exchange brought back.
    package enum Exchange: Sendable, Equatable {
        /// An HTTP answer: its status, Apple's error body if it had one, and `Retry-After` in UNIX ms.
        case http(status: Int, body: [UInt8], error: ServerAPIError?, retryAfterMs: Int64?)
        /// No answer: connect or TLS failure, timeout, reset.
        case failure(String)
    }

    package enum Action: Sendable, Equatable {
        /// Send to `environment` after waiting `after`, giving it `timeout`.
        case send(StoreEnvironment, after: Duration, timeout: Duration)
        case finish(Result<ServerAPIAnswer, ServerAPIFailure>)
    }

    package let policy: ServerAPIRetryPolicy
    /// Whether a transaction id unknown in production is asked of sandbox (off for calls that
    /// name no transaction, and when sandbox is not accepted).
    package let switchesToSandbox: Bool
    private let start: Duration
    private var environment: StoreEnvironment
    private var switched = false
    private var retries = 0
    package private(set) var attempts = 0
    /// Whether the last failure says Apple as a whole is failing (no answer, 5xx, 5000001), the
    /// only kind that may feed a circuit breaker.
    package private(set) var failureIsAppleWide = false

    /// `now` is a monotonic reading; `first` the environment asked first (production unless the
    /// caller knows the data is sandbox's).
    package init(
        policy: ServerAPIRetryPolicy, now: Duration, first: StoreEnvironment = .production, switchesToSandbox: Bool = true
    ) {
        self.policy = policy
        self.start = now
        self.environment = first
        self.switchesToSandbox = switchesToSandbox && first == .production
    }

    /// The environment of the exchange in flight (or the last one).
    package var currentEnvironment: StoreEnvironment { environment }

    package mutating func begin() -> Action {
        attempts = 1
        return .send(environment, after: .zero, timeout: min(policy.attemptTimeout, policy.deadline))
    }

    /// The next action after an exchange ended at monotonic `now`, the wall clock reading
    /// `wallNowMs` (for `Retry-After`). `random` is uniform in 0..<1 (jitter).
    package mutating func received(_ exchange: Exchange, now: Duration, wallNowMs: Int64, random: Double) -> Action {
        switch exchange {
        case .failure(let reason):
            failureIsAppleWide = true
            return retry(now: now, random: random, reason: "no answer: \(reason)")
        case .http(let status, let body, let error, let retryAfterMs):
            failureIsAppleWide = false
            if (200..<300).contains(status) { return .finish(.success(ServerAPIAnswer(body: body, environment: environment))) }
            let code = error?.code
            if status == 401 || status == 403 { return .finish(.failure(.unauthorized(status: status))) }
            if status == 429 || code == ServerAPIErrorCode.rateLimitExceeded {
                return rateLimited(now: now, wallNowMs: wallNowMs, retryAfterMs: retryAfterMs, random: random)
            }
            if code == ServerAPIErrorCode.invalidTransactionID { return .finish(.failure(.invalidTransactionID)) }
            if code == ServerAPIErrorCode.transactionIDNotFound || (status == 404 && code == nil) {
                guard switchesToSandbox, !switched else { return .finish(.failure(.notFound)) }
                switched = true
                environment = .sandbox
                return send(after: .zero, now: now)
            }
            if let code, ServerAPIErrorCode.retryable.contains(code) {
                failureIsAppleWide = code == 5_000_001
                return retry(now: now, random: random, reason: "Apple asked to try again (\(code))")
            }
            if status >= 500 {
                failureIsAppleWide = true
                return retry(now: now, random: random, reason: "HTTP \(status)" + (code.map { " (\($0))" } ?? ""))
            }
            return .finish(.failure(.rejected(status: status, error: error)))
        }
    }

    /// A 429: wait until Apple's `Retry-After` if the deadline allows, else end unavailable and
    /// pass the wait on to the caller.
    private mutating func rateLimited(now: Duration, wallNowMs: Int64, retryAfterMs: Int64?, random: Double) -> Action {
        let wait: Duration? = retryAfterMs.map { .milliseconds(max(0, $0 - wallNowMs)) }
        guard let wait else { return retry(now: now, random: random, reason: "rate limited (429)") }
        guard retries < policy.maxRetries, now - start + wait < policy.deadline else {
            return .finish(.failure(.unavailable(reason: "rate limited (429)", retryAfter: wait)))
        }
        retries += 1
        return send(after: wait, now: now)
    }

    private mutating func retry(now: Duration, random: Double, reason: String) -> Action {
        guard retries < policy.maxRetries else {
            return .finish(.failure(.unavailable(reason: "\(reason); retries exhausted", retryAfter: nil)))
        }
        // Full jitter over an exponential ceiling.
        let ceiling = min(policy.maxDelay, policy.baseDelay * (1 << min(retries, 20)))
        let delay = ceiling * max(0, min(random, 1))
        guard now - start + delay < policy.deadline else {
            return .finish(.failure(.unavailable(reason: "\(reason); deadline reached", retryAfter: nil)))
        }
        retries += 1
        return send(after: delay, now: now)
    }

    private mutating func send(after delay: Duration, now: Duration) -> Action {
        attempts += 1
        let left = policy.deadline - (now - start) - delay
        return .send(environment, after: delay, timeout: max(.milliseconds(1), min(policy.attemptTimeout, left)))
    }
}
