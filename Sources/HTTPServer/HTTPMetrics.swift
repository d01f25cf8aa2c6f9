public import CoreMetrics
import Synchronization

/// Request metrics by route pattern (never by raw path: one series per route, however many users):
/// - `http_requests_total{method, route, status}`
/// - `http_request_duration_seconds{method, route, status}`: from dispatch to the response built.
/// Requests that match no route count under `route="unmatched"`, unparseable ones under `"unparsed"`,
/// connections refused at ``HTTPServerConfiguration/maxConnections`` under `"overloaded"`.
/// Each series' metric objects are made once and kept, so recording is a dictionary hit.
public final class HTTPMetrics: Sendable {
    private struct Series: Hashable {
        var method: String
        var route: String
        var status: Int
    }

    private let factory: any MetricsFactory
    private let series = Mutex<[Series: (Counter, Timer)]>([:])

    public init(factory: any MetricsFactory) { self.factory = factory }

    public func record(method: String, route: String, status: Int, nanoseconds: UInt64) {
        let key = Series(method: method, route: route, status: status)
        let (counter, timer) = series.withLock { all in
            if let found = all[key] { return found }
            let dimensions = [("method", method), ("route", route), ("status", String(status))]
            let made = (
                Counter(label: "http_requests_total", dimensions: dimensions, factory: factory),
                Timer(label: "http_request_duration_seconds", dimensions: dimensions, factory: factory)
            )
            all[key] = made
            return made
        }
        counter.increment()
        timer.recordNanoseconds(Int64(clamping: nanoseconds))
    }
}
