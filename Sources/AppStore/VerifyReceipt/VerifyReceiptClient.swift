package import Clocks
package import CurlTransport
package import Entitlements
import FoundationEssentials
import JSON
package import Resilience

/// Asks Apple's verifyReceipt about one receipt: runs `VerifyReceiptStateMachine`'s actions over
/// an `HTTPTransport` (Docs/apple-protocols.md §1.1–1.3).
package struct VerifyReceiptClient: Sendable {
    package struct Configuration: Sendable {
        package var productionURL: String
        package var sandboxURL: String
        /// The `password` sent with a receipt: the shared secret of the App Store Connect account
        /// its app belongs to (nil: none sent); never logged.
        package var sharedSecret: @Sendable (_ receiptData: String) -> String?
        package var policy: VerifyReceiptPolicy

        /// One shared secret for every receipt (one App Store Connect account).
        package init(
            productionURL: String = "https://buy.itunes.apple.com/verifyReceipt",
            sandboxURL: String = "https://sandbox.itunes.apple.com/verifyReceipt", sharedSecret: String?,
            policy: VerifyReceiptPolicy = VerifyReceiptPolicy()
        ) {
            self.init(
                productionURL: productionURL, sandboxURL: sandboxURL, sharedSecretFor: { _ in sharedSecret }, policy: policy)
        }

        /// The shared secret chosen per receipt (several accounts: by the app the receipt names).
        package init(
            productionURL: String = "https://buy.itunes.apple.com/verifyReceipt",
            sandboxURL: String = "https://sandbox.itunes.apple.com/verifyReceipt",
            sharedSecretFor: @escaping @Sendable (_ receiptData: String) -> String?,
            policy: VerifyReceiptPolicy = VerifyReceiptPolicy()
        ) {
            self.productionURL = productionURL
            self.sandboxURL = sandboxURL
            self.sharedSecret = sharedSecretFor
            self.policy = policy
        }
    }

    /// The result and what it took, for the verification log.
    package struct Verification: Sendable {
        package var result: VerificationResult
        /// Exchanges sent, the environment switch and retries included.
        package var attempts: Int
        /// The environment of the last exchange.
        package var environment: StoreEnvironment
        package var duration: Duration
        /// When Apple may be asked again: set when the circuit breaker refused the call.
        package var retryAfter: Duration? = nil
    }

    package let configuration: Configuration
    private let transport: any HTTPTransport
    private let clock: any MonotonicClock
    private let random: @Sendable () -> Double
    /// Fails verifications fast while Apple is down; nil: every verification calls Apple.
    package let breaker: SharedCircuitBreaker?
    /// At most this many verifications talk to Apple at once; nil: no cap.
    package let limit: ConcurrencyLimit?
    private let metrics: AppStoreMetrics
    /// The same receipt asked about while a verification of it runs shares that verification.
    private let flights = SingleFlight<FlightKey, Verification>()

    struct FlightKey: Hashable, Sendable {
        var receiptData: String
        var excludeOldTransactions: Bool
    }

    package init(
        configuration: Configuration, transport: any HTTPTransport, clock: any MonotonicClock = SystemMonotonicClock(),
        breaker: SharedCircuitBreaker? = nil, limit: ConcurrencyLimit? = nil,
        random: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) }, metrics: AppStoreMetrics = .init()
    ) {
        self.metrics = metrics
        self.configuration = configuration
        self.transport = transport
        self.clock = clock
        self.breaker = breaker
        self.limit = limit
        self.random = random
    }

    /// The clock's reading now (for the breaker's status).
    package var now: Duration { clock.now }

    /// Verifies a receipt. Callers asking about the same receipt while it is being verified share
    /// the one exchange with Apple (single flight).
    package func verify(receiptData: String, excludeOldTransactions: Bool = false) async -> Verification {
        await flights.run(FlightKey(receiptData: receiptData, excludeOldTransactions: excludeOldTransactions)) {
            await verifyOnce(receiptData: receiptData, excludeOldTransactions: excludeOldTransactions)
        }.value
    }

    /// Verifications running now (one per distinct receipt).
    package var inFlight: Int { flights.count }

    /// Callers waiting for those verifications.
    package var callersInFlight: Int { flights.callers }

    private func verifyOnce(receiptData: String, excludeOldTransactions: Bool) async -> Verification {
        let body = Self.requestBody(
            receiptData: receiptData, password: configuration.sharedSecret(receiptData),
            excludeOldTransactions: excludeOldTransactions)
        let started = clock.now
        var policy = configuration.policy
        switch breaker?.decide(now: started) {
        case .reject(let retryAfter)?:
            metrics.verification("circuit_open")
            return Verification(
                result: .unavailable(status: nil, reason: "circuit breaker open: Apple failed repeatedly"), attempts: 0,
                environment: .production, duration: .zero, retryAfter: retryAfter)
        case .probe?:
            // A probe asks once: whether Apple is back, not a retry budget's worth of calls.
            policy.maxRetries = 0
        case .allow?, nil:
            break
        }
        guard let limit else { return await exchange(body, policy: policy, started: started) }
        return await limit.run { [policy] in await exchange(body, policy: policy, started: started) }
    }

    /// The state machine's exchanges with Apple, and the breaker told how they ended.
    private func exchange(_ body: [UInt8], policy: VerifyReceiptPolicy, started: Duration) async -> Verification {
        // The deadline runs from the first exchange, not from the wait for a slot.
        var machine = VerifyReceiptStateMachine(policy: policy, now: clock.now)
        var action = machine.begin()
        var environment = StoreEnvironment.production
        while true {
            if case .send(_, let delay, _) = action, delay > .zero, case .open? = breaker?.state {
                // A retry, but the breaker opened meanwhile (other verifications failed): stop here
                // rather than keep calling an Apple that is down.
                metrics.verification("circuit_open")
                return Verification(
                    result: .unavailable(status: nil, reason: "circuit breaker opened during retries"),
                    attempts: machine.attempts - 1,  // the planned exchange was not sent
                    environment: environment, duration: clock.now - started, retryAfter: breaker?.retryAfter(now: clock.now))
            }
            switch action {
            case .finish(let result):
                if case .unavailable = result {
                    if machine.failureIsAppleWide {
                        breaker?.record(available: false, now: clock.now)
                    } else {
                        breaker?.recordInconclusive(now: clock.now)
                    }
                } else {
                    breaker?.record(available: true, now: clock.now)
                }
                metrics.verification(result.metricName)
                return Verification(
                    result: result, attempts: machine.attempts, environment: environment, duration: clock.now - started)
            case .send(let target, let delay, let timeout):
                if delay > .zero { await clock.sleep(for: delay) }
                let kind = machine.attempts <= 1 ? "first" : target == environment ? "retry" : "fallback"
                environment = target
                let url = target == .production ? configuration.productionURL : configuration.sandboxURL
                let sent = clock.now
                let outcome = Self.outcome(of: await transport.post(url: url, json: body, timeout: timeout))
                metrics.exchange(environment: target, kind: kind, outcome: outcome, duration: clock.now - sent)
                action = machine.received(outcome, now: clock.now, random: random())
            }
        }
    }

    /// `{"receipt-data", "password", "exclude-old-transactions"}` (§1.1).
    static func requestBody(receiptData: String, password: String?, excludeOldTransactions: Bool) -> [UInt8] {
        var body: [Identifier: JSONValue] = [
            "receipt-data": .string(receiptData), "exclude-old-transactions": .bool(excludeOldTransactions),
        ]
        if let password { body["password"] = .string(password) }
        return JSONValue.object(body).jsonBytes
    }

    static func outcome(of result: TransportResult) -> VerifyReceiptStateMachine.Outcome {
        switch result {
        case .failure(let reason):
            return .transportFailure(reason)
        case .response(let status, let body, _):
            guard (200..<300).contains(status) else { return .httpStatus(status) }
            do {
                return .answer(try VerifyReceiptResponse(json: body))
            } catch {
                return .transportFailure("\(error)")
            }
        }
    }
}
