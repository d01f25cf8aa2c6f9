import HTTPServer

/// Drives receiptd's `HTTPRequestParser` the way a connection does: feed the bytes after the
/// last complete request, answer `sendContinue` by going on, stop after a request that does not
/// keep the connection alive.
public enum OurParser {
    /// Limits far above any fuzz input, so the differential compares syntax, not sizes.
    public static let limits = HTTPParserLimits(
        maxRequestLineBytes: 1 << 20, maxHeaderBytes: 1 << 20, maxHeaderCount: 1 << 16, maxBodyBytes: 1 << 24)

    /// Parses all of `input`. `chunkSizes`, when given, feeds the bytes in pieces of those sizes
    /// (cycled), as a socket would deliver them; the result must not depend on it.
    public static func trace(_ input: [UInt8], limits: HTTPParserLimits = limits, chunkSizes: [Int] = []) -> ParseTrace {
        var trace = ParseTrace()
        var parser = HTTPRequestParser(limits: limits)
        var start = 0
        var available = chunkSizes.isEmpty ? input.count : 0
        var nextChunk = 0
        func grow() -> Bool {
            guard available < input.count else { return false }
            let size = max(1, chunkSizes[nextChunk % chunkSizes.count])
            nextChunk += 1
            available = min(input.count, available + size)
            return true
        }
        if !chunkSizes.isEmpty { _ = grow() }
        while true {
            let event = input.withUnsafeBufferPointer { all in
                parser.parse(UnsafeBufferPointer(rebasing: all[start..<max(start, available)]))
            }
            switch event {
            case .sendContinue:
                continue
            case .needMore:
                if !chunkSizes.isEmpty && grow() { continue }
                trace.outcome = .needMore
                return trace
            case .failure(let error):
                trace.outcome = .error(error.code)
                return trace
            case .request(let request, let consumed):
                precondition(consumed > 0 && start + consumed <= available, "consumed \(consumed) of \(available - start)")
                start += consumed
                trace.messages.append(
                    ParseTrace.Message(
                        method: request.method.rawValue, target: request.target,
                        version: .init(major: request.version.major, minor: request.version.minor),
                        headers: request.headers.map { .init(name: $0.name, value: $0.value) },
                        trailers: request.trailers.map { .init(name: $0.name, value: $0.value) },
                        body: request.body, end: start, keepAlive: request.keepAlive))
                if !request.keepAlive {
                    trace.outcome = .stopped
                    return trace
                }
                if start == available && !(chunkSizes.isEmpty ? false : grow()) {
                    trace.outcome = .needMore
                    return trace
                }
            }
        }
    }
}
