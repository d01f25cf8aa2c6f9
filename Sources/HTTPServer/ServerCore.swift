import Logging
import Synchronization

/// What every loop and connection of one server shares: configuration, the responder, the logger,
/// the connection count and the draining flag. Immutable or atomic, hence `Sendable`.
final class ServerCore: Sendable {
    let configuration: HTTPServerConfiguration
    let responder: any HTTPResponder
    let logger: Logger
    let requestIDs = RequestID.Generator()

    let headerTimeout: UInt64
    let bodyTimeout: UInt64
    let idleTimeout: UInt64
    let writeTimeout: UInt64
    /// Bytes of pipelined input kept while a response is pending, before reading pauses.
    let pipelineBufferLimit: Int

    private let openConnections = Atomic<Int>(0)
    private let draining = Atomic<Bool>(false)

    /// Where requests refused before routing are counted (unparseable, or over the connection limit).
    let metrics: HTTPMetrics?
    /// Where the handlers of requests that may write run (nil: with the rest).
    let writeExecutor: WriteExecutor?

    init(configuration: HTTPServerConfiguration, responder: any HTTPResponder, logger: Logger, metrics: HTTPMetrics?) {
        self.metrics = metrics
        self.configuration = configuration
        self.responder = responder
        self.logger = logger
        headerTimeout = configuration.headerTimeout.nanoseconds
        bodyTimeout = configuration.bodyTimeout.nanoseconds
        idleTimeout = configuration.idleTimeout.nanoseconds
        writeTimeout = configuration.writeTimeout.nanoseconds
        let l = configuration.limits
        pipelineBufferLimit = l.maxRequestLineBytes + l.maxHeaderBytes + l.maxBodyBytes + 64 * 1024
        writeExecutor =
            configuration.writeHandlersNice > 0
            ? WriteExecutor(threads: HTTPServerConfiguration.coreCount, nice: configuration.writeHandlersNice) : nil
    }

    deinit { writeExecutor?.stop() }

    var isDraining: Bool { draining.load(ordering: .relaxed) }
    func beginDraining() -> Bool { !draining.exchange(true, ordering: .acquiringAndReleasing) }

    /// Connections open now, across loops.
    var connectionCount: Int { openConnections.load(ordering: .relaxed) }

    /// Reserves a slot for a new connection; false when the server is full.
    func reserveConnection() -> Bool {
        let after = openConnections.wrappingAdd(1, ordering: .relaxed).newValue
        if after > configuration.maxConnections {
            openConnections.wrappingSubtract(1, ordering: .relaxed)
            return false
        }
        return true
    }

    func releaseConnection() { openConnections.wrappingSubtract(1, ordering: .relaxed) }

    /// One line per request. Never bodies or header values beyond the request id.
    func logAccess(
        method: HTTPMethod, path: Substring, status: Int, bytes: Int, durationNanoseconds: UInt64,
        requestID: String, remoteAddress: String
    ) {
        logger.info(
            "request",
            metadata: [
                "method": "\(method.rawValue)",
                "path": "\(path)",
                "status": "\(status)",
                "bytes": "\(bytes)",
                "duration_ms": "\(Double(durationNanoseconds / 1000) / 1000)",
                "request_id": "\(requestID)",
                "remote": "\(remoteAddress)",
            ])
    }
}
