import Glibc

/// Everything the HTTP server can be told. Defaults suit a service behind a load balancer.
public struct HTTPServerConfiguration: Sendable {
    /// Address to bind, an IPv4 or IPv6 literal. Default `127.0.0.1`.
    public var host: String
    /// Port to bind; 0 picks a free one (tests). Default 8080.
    public var port: Int
    /// Event-loop threads. Default: one per core.
    public var eventLoops: Int
    /// Bounds on request bytes (request line 414, header 431, body 413).
    public var limits: HTTPParserLimits
    /// Connections served at once. Past it, a new connection gets `503` with `Retry-After: 1`
    /// and is closed at once, so clients fail fast instead of hanging in the accept queue.
    public var maxConnections: Int
    /// From a request's first byte (or from accept) to the end of its head; a slowloris
    /// client that dribbles headers is answered 408 and closed when it passes.
    public var headerTimeout: Duration
    /// From the end of a head to the end of its body. Past it: 408 and close.
    public var bodyTimeout: Duration
    /// How long a keep-alive connection may sit between requests before it is closed.
    public var idleTimeout: Duration
    /// How long a response may take to be written to a slow reader before the connection is closed.
    public var writeTimeout: Duration
    /// On shutdown, how long in-flight requests may take before connections are closed regardless.
    public var shutdownGracePeriod: Duration
    /// Listen backlog.
    public var backlog: Int32
    /// Whether to log one line per request (method, path, status, bytes, duration, request id).
    public var accessLog: Bool
    /// The nice value of the threads that run the handlers of requests that may write (every
    /// method not ``HTTPMethod/isSafe``), one per core: above 0, a saturated machine serves
    /// reads first (see `WriteExecutor`), and writes lose CPU to every other process too; 0 (the
    /// default): those handlers run on Swift's shared threads with the rest.
    public var writeHandlersNice: Int32 = 0

    public init(
        host: String = "127.0.0.1", port: Int = 8080, eventLoops: Int = HTTPServerConfiguration.coreCount,
        limits: HTTPParserLimits = HTTPParserLimits(), maxConnections: Int = 16_384,
        headerTimeout: Duration = .seconds(10), bodyTimeout: Duration = .seconds(30),
        idleTimeout: Duration = .seconds(75), writeTimeout: Duration = .seconds(30),
        shutdownGracePeriod: Duration = .seconds(10), backlog: Int32 = 1024, accessLog: Bool = true
    ) {
        self.host = host
        self.port = port
        self.eventLoops = eventLoops
        self.limits = limits
        self.maxConnections = maxConnections
        self.headerTimeout = headerTimeout
        self.bodyTimeout = bodyTimeout
        self.idleTimeout = idleTimeout
        self.writeTimeout = writeTimeout
        self.shutdownGracePeriod = shutdownGracePeriod
        self.backlog = backlog
        self.accessLog = accessLog
    }

    /// Online cores, at least 1.
    public static var coreCount: Int { max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))) }

    /// The shortest timeout (or the shutdown grace period) decides how often connections are checked.
    var sweepInterval: UInt64 {
        let shortest = [headerTimeout, bodyTimeout, idleTimeout, writeTimeout, shutdownGracePeriod].min()!
        return min(max(shortest.nanoseconds / 4, 5_000_000), 1_000_000_000)
    }
}

extension Duration {
    /// Whole nanoseconds, saturating at zero.
    var nanoseconds: UInt64 {
        let (s, a) = components
        let total = Double(s) * 1e9 + Double(a) / 1e9
        return total <= 0 ? 0 : UInt64(min(total, Double(UInt64.max / 2)))
    }
}
