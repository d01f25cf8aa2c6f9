import Glibc
import HTTPServer

extension HTTPServerConfiguration {
    /// `http.*`: the bind address, the parser's limits and the timeouts.
    static func read(_ c: ConfigLoader) throws(ConfigurationError) -> HTTPServerConfiguration {
        let limits = HTTPParserLimits(
            // Longest request line before 414.
            maxRequestLineBytes: try c.int("http.maxRequestLineBytes", default: 8192, range: 64...1_048_576),
            // Largest header section before 431.
            maxHeaderBytes: try c.int("http.maxHeaderBytes", default: 16_384, range: 256...1_048_576),
            // Most header fields before 431.
            maxHeaderCount: try c.int("http.maxHeaderCount", default: 100, range: 1...10_000),
            // Largest request body before 413.
            maxBodyBytes: try c.int("http.maxBodyBytes", default: 1_048_576, range: 0...1_073_741_824))
        var http = HTTPServerConfiguration(
            // Address to bind: an IPv4 or IPv6 literal.
            host: try c.string("http.host", default: "127.0.0.1"),
            // Port to bind; 0 picks a free one.
            port: try c.int("http.port", default: 8080, range: 0...65_535),
            // Event-loop threads; 0 means one per core.
            eventLoops: try c.int("http.eventLoops", default: 0, range: 0...256).nonZero ?? HTTPServerConfiguration.coreCount,
            limits: limits,
            // Connections at once; past it new ones get 503 and are closed.
            maxConnections: try c.int("http.maxConnections", default: 16_384, range: 1...1_000_000),
            // Time from a request's first byte to the end of its head (slowloris guard).
            headerTimeout: try c.milliseconds("http.headerTimeoutMs", default: 10_000),
            // Time from the end of the head to the end of the body.
            bodyTimeout: try c.milliseconds("http.bodyTimeoutMs", default: 30_000),
            // Time a keep-alive connection may idle between requests.
            idleTimeout: try c.milliseconds("http.idleTimeoutMs", default: 75_000),
            // Time a response may take to reach a slow reader.
            writeTimeout: try c.milliseconds("http.writeTimeoutMs", default: 30_000),
            // On SIGTERM, how long in-flight requests may still run.
            shutdownGracePeriod: try c.milliseconds("http.shutdownGraceMs", default: 10_000),
            // One log line per request.
            accessLog: try c.bool("http.accessLog", default: true))
        // Nice of the threads running the handlers of requests that may write (0: none of their own).
        http.writeHandlersNice = Int32(try c.int("http.writeHandlersNice", default: 0, range: 0...19))
        guard isIPLiteral(http.host) else {
            throw ConfigurationError(key: "http.host", message: "must be an IPv4 or IPv6 address literal, got \"\(http.host)\"")
        }
        return http
    }

    private static func isIPLiteral(_ host: String) -> Bool {
        var v4 = in_addr()
        var v6 = in6_addr()
        return inet_pton(AF_INET, host, &v4) == 1 || inet_pton(AF_INET6, host, &v6) == 1
    }
}

extension Int {
    fileprivate var nonZero: Int? { self == 0 ? nil : self }
}
