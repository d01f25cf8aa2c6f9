package import CoreMetrics
import Entitlements

/// What ``VerifyReceiptClient`` records (swift-metrics; Prometheus names in Docs/operations.md "Metrics"):
/// - `appstore_exchanges_total{environment, kind, status}`: each HTTP exchange with Apple. `kind` is
///   `first`, `retry` (the same environment again) or `fallback` (21007/21008 sent it to the other
///   one); `status` is Apple's status (`0`, `21004`, `21007`, …), `http_NNN` or `transport_error`.
/// - `appstore_exchange_duration_seconds{environment}`: their latency.
/// - `appstore_verifications_total{result}`: what each verification came to (`valid`,
///   `invalid_receipt`, `misconfigured`, `unexpected`, `unavailable`, `circuit_open`).
package struct AppStoreMetrics: Sendable {
    let factory: any MetricsFactory

    package init(factory: any MetricsFactory = NOOPMetricsHandler.instance) { self.factory = factory }

    func exchange(
        environment: StoreEnvironment, kind: String, outcome: VerifyReceiptStateMachine.Outcome, duration: Duration
    ) {
        let status =
            switch outcome {
            case .answer(let response): String(response.status.rawValue)
            case .httpStatus(let code): "http_\(code)"
            case .transportFailure: "transport_error"
            }
        Counter(
            label: "appstore_exchanges_total",
            dimensions: [("environment", environment.rawValue), ("kind", kind), ("status", status)], factory: factory
        ).increment()
        Timer(label: "appstore_exchange_duration_seconds", dimensions: [("environment", environment.rawValue)], factory: factory)
            .recordNanoseconds(duration.components.seconds * 1_000_000_000 + duration.components.attoseconds / 1_000_000_000)
    }

    func verification(_ result: String) {
        Counter(label: "appstore_verifications_total", dimensions: [("result", result)], factory: factory).increment()
    }
}

extension VerificationResult {
    /// The `result` label of `appstore_verifications_total`.
    var metricName: String {
        switch self {
        case .valid: "valid"
        case .invalidReceipt: "invalid_receipt"
        case .misconfigured: "misconfigured"
        case .unavailable: "unavailable"
        case .unexpected: "unexpected"
        }
    }
}
