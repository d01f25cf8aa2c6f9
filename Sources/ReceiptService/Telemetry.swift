import AppStore
import CoreMetrics
import HTTPServer
import Prometheus
import Resilience
import Synchronization

/// The service's metrics, served as Prometheus text at GET /metrics (Docs/operations.md "Metrics"). One
/// registry per ``Application`` (tests run several side by side); every component records through
/// swift-metrics to ``factory``, and the gauges that describe a moment are read at scrape time.
final class Telemetry: Sendable {
    let registry = PrometheusCollectorRegistry()
    let factory: PrometheusMetricsFactory
    let http: HTTPMetrics
    /// The server's open connections, once it exists (it is built after the routes that scrape).
    private let connections = Mutex<(@Sendable () -> Int)?>(nil)

    func watch(_ server: HTTPServer) { connections.withLock { $0 = { server.connectionCount } } }

    init() {
        var factory = PrometheusMetricsFactory(registry: registry)
        // From 100 µs (a cached GET) to 10 s (Apple's slowest answers).
        factory.defaultDurationHistogramBuckets = [
            .microseconds(100), .microseconds(250), .microseconds(500), .milliseconds(1), .milliseconds(2.5),
            .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100),
            .milliseconds(250), .milliseconds(500), .seconds(1), .seconds(2.5), .seconds(5), .seconds(10),
        ]
        self.factory = factory
        http = HTTPMetrics(factory: factory)
    }

    // The gauges read at scrape time, with their help text.
    static var openConnections: MetricNameDescriptor {
        .init(metricName: "http_open_connections", unitName: "", helpText: "HTTP connections open now.")
    }
    static var cachedDocuments: MetricNameDescriptor {
        .init(metricName: "subscriber_cache_entries", unitName: "", helpText: "Subscriber documents held in memory.")
    }
    static var circuitState: MetricNameDescriptor {
        .init(
            metricName: "appstore_circuit_state", unitName: "",
            helpText: "The App Store circuit breaker: 1 for the state it is in.")
    }

    /// What the moment looks like, then every family as Prometheus text (version 0.0.4).
    func scrape(breaker: CircuitBreaker.State?, cachedDocuments: Int) -> [UInt8] {
        registry.makeGauge(descriptor: Self.openConnections).set(Int64(connections.withLock { $0 }?() ?? 0))
        registry.makeGauge(descriptor: Self.cachedDocuments).set(Int64(cachedDocuments))
        // One series per state, 1 for the current one (`closed` when there is no breaker).
        let current = breaker?.name ?? "closed"
        for state in ["closed", "half_open", "open"] {
            registry.makeGauge(descriptor: Self.circuitState, labels: [("state", state)]).set(Int64(state == current ? 1 : 0))
        }
        return registry.emitToBuffer()
    }
}
