import Clocks
import CurlTransport
import MetricsTestKit
import Testing

@testable import AppStore

private func status(_ code: Int) -> TransportResult { .response(status: 200, body: Array(#"{"status":\#(code)}"#.utf8)) }

private final class Answers: HTTPTransport, @unchecked Sendable {  // used by one verification at a time
    var production: [TransportResult]
    var sandbox: [TransportResult]
    init(production: [TransportResult], sandbox: [TransportResult] = []) {
        self.production = production
        self.sandbox = sandbox
    }
    func send(_ request: OutboundRequest) async -> TransportResult {
        request.url.hasSuffix("/sandbox") ? sandbox.removeFirst() : production.removeFirst()
    }
}

private struct NoWait: MonotonicClock {
    var now: Duration { .zero }
    func sleep(for duration: Duration) async {}
}

@Suite("App Store metrics")
struct AppStoreMetricsTests {
    let configuration = VerifyReceiptClient.Configuration(
        productionURL: "http://127.0.0.1:1/production", sandboxURL: "http://127.0.0.1:1/sandbox", sharedSecret: "s")

    private func verify(_ transport: Answers, _ metrics: TestMetrics) async -> VerifyReceiptClient.Verification {
        await VerifyReceiptClient(
            configuration: configuration, transport: transport, clock: NoWait(), random: { 0 },
            metrics: AppStoreMetrics(factory: metrics)
        ).verify(receiptData: "x")
    }

    private func exchanges(_ metrics: TestMetrics, _ dimensions: [(String, String)]) -> Int64 {
        metrics.counters(label: "appstore_exchanges_total").filter { c in
            dimensions.allSatisfy { d in c.dimensions.contains { $0 == d } }
        }.reduce(0) { $0 + $1.totalValue }
    }

    @Test func a21004IsItsOwnSeriesAndAMisconfiguration() async throws {
        let metrics = TestMetrics()
        _ = await verify(Answers(production: [status(21004)]), metrics)
        #expect(exchanges(metrics, [("status", "21004"), ("kind", "first"), ("environment", "production")]) == 1)
        #expect(try metrics.expectCounter("appstore_verifications_total", [("result", "misconfigured")]).totalValue == 1)
    }

    @Test func fallbacksAndRetriesAreToldApart() async throws {
        let metrics = TestMetrics()
        _ = await verify(Answers(production: [status(21007)], sandbox: [status(21005), status(0)]), metrics)
        #expect(exchanges(metrics, [("kind", "first"), ("status", "21007")]) == 1)
        #expect(exchanges(metrics, [("kind", "fallback"), ("environment", "sandbox"), ("status", "21005")]) == 1)
        #expect(exchanges(metrics, [("kind", "retry"), ("environment", "sandbox"), ("status", "0")]) == 1)
        #expect(try metrics.expectCounter("appstore_verifications_total", [("result", "valid")]).totalValue == 1)
        #expect(try metrics.expectTimer("appstore_exchange_duration_seconds", [("environment", "sandbox")]).values.count == 2)
    }

    @Test func transportFailuresAndHTTPStatusesAreLabelled() async {
        let metrics = TestMetrics()
        _ = await verify(
            Answers(production: [.failure("reset"), .response(status: 503, body: []), status(0)]), metrics)
        #expect(exchanges(metrics, [("status", "transport_error")]) == 1)
        #expect(exchanges(metrics, [("status", "http_503"), ("kind", "retry")]) == 1)
    }
}
