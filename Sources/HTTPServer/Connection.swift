import CLinux
import Glibc
import Logging

/// One accepted socket and the requests on it. Owns its file descriptor.
///
/// Confined to its ``EventLoop``: every method runs on the loop's thread. Handler tasks come
/// back through `loop.execute`, which is why the type is `@unchecked Sendable`.
/// Requests are answered strictly one at a time in arrival order; pipelined requests wait in the
/// input buffer until the previous response has been written (RFC 9112 §9.3.2).
final class Connection: EventHandler, @unchecked Sendable {
    /// What the connection is waiting for; decides which timeout applies.
    /// `streaming`: a streamed body (``HTTPResponse/stream``) is being produced and written.
    enum Phase { case awaitingHead, readingHead, readingBody, responding, writing, streaming }

    let fd: Int32
    let remoteAddress: String
    private unowned let loop: EventLoop
    private unowned let owner: LoopAcceptor
    private let core: ServerCore

    private var input: [UInt8] = []
    private var inputStart = 0
    private var parser: HTTPRequestParser
    private var output: [UInt8] = []
    private var outputOffset = 0

    private(set) var phase: Phase = .awaitingHead
    /// Monotonic ns after which the current phase has timed out.
    private(set) var deadline: UInt64
    private var closeAfterWrite = false
    private var readingEnabled = true
    private var writeInterest = false
    private(set) var isClosed = false
    /// The producer of a streamed body waiting for its last part to leave: resumed with whether to
    /// go on (false once the connection is closed).
    private var partWritten: CheckedContinuation<Bool, Never>?

    // The request being answered, for the access log.
    private var current: (method: HTTPMethod, path: Substring, id: String, start: UInt64, status: Int, bytes: Int)?

    init(fd: Int32, remoteAddress: String, loop: EventLoop, owner: LoopAcceptor, core: ServerCore) {
        self.fd = fd
        self.remoteAddress = remoteAddress
        self.loop = loop
        self.owner = owner
        self.core = core
        self.parser = HTTPRequestParser(limits: core.configuration.limits)
        self.deadline = loop.now + core.headerTimeout
    }

    // MARK: Events

    func handle(events: UInt32) {
        if events & receiptd_EPOLLOUT != 0 { flush() }
        if isClosed { return }
        if events & (receiptd_EPOLLIN | receiptd_EPOLLHUP | receiptd_EPOLLERR | receiptd_EPOLLRDHUP) != 0 {
            readAvailable()
        }
    }

    private func readAvailable() {
        while readingEnabled && !isClosed {
            let result: Syscall.IOResult
            do {
                result = try loop.scratch.withUnsafeMutableBytes { buf throws(SystemError) in
                    try Syscall.io("read") { Glibc.read(fd, buf.baseAddress, buf.count) }
                }
            } catch {
                close()
                return
            }
            switch result {
            case .wouldBlock:
                processInput()
                return
            case .processed(0):
                peerClosed()
                return
            case .processed(let n):
                if phase == .awaitingHead {
                    phase = .readingHead
                    deadline = loop.now + core.headerTimeout
                }
                input.append(contentsOf: loop.scratch[0..<n])
                if phase == .responding || phase == .writing || phase == .streaming {
                    // Pipelined bytes while a response is pending: keep them, but not without bound.
                    if input.count - inputStart > core.pipelineBufferLimit { setReading(false) }
                    continue
                }
                if n < loop.scratch.count {
                    processInput()
                    return
                }
            }
        }
    }

    /// The peer sent FIN. Finish what is in flight, then close; nothing more will arrive.
    private func peerClosed() {
        setReading(false)
        switch phase {
        case .responding, .writing, .streaming:
            closeAfterWrite = true
        default:
            processInput()
            if phase == .responding || phase == .writing || phase == .streaming {
                closeAfterWrite = true
            } else {
                close()
            }
        }
    }

    // MARK: Parsing and dispatch

    private func processInput() {
        while !isClosed && (phase == .awaitingHead || phase == .readingHead || phase == .readingBody) {
            if inputStart == input.count {
                return
            }
            let event = input.withUnsafeBufferPointer { buf in
                parser.parse(UnsafeBufferPointer(rebasing: buf[inputStart...]))
            }
            switch event {
            case .needMore:
                if parser.isReadingBody && phase != .readingBody {
                    phase = .readingBody
                    deadline = loop.now + core.bodyTimeout
                } else if phase == .awaitingHead {
                    phase = .readingHead
                    deadline = loop.now + core.headerTimeout
                }
                return
            case .sendContinue:
                phase = .readingBody
                deadline = loop.now + core.bodyTimeout
                output.append(contentsOf: HTTPResponseSerializer.continueResponse)
                flush()
            case .request(let request, let consumed):
                inputStart += consumed
                if inputStart == input.count {
                    input.removeAll(keepingCapacity: input.capacity <= 64 * 1024)
                    inputStart = 0
                }
                dispatch(request)
            case .failure(let error):
                setReading(false)
                respondToParseError(error)
            }
        }
    }

    private func dispatch(_ request: HTTPRequest) {
        phase = .responding
        deadline = .max
        let requestID = RequestID.take(from: request.headers) ?? core.requestIDs.next()
        current = (request.method, request.path, requestID, Syscall.monotonicNanoseconds(), 0, 0)
        let context = RequestContext(requestID: requestID, remoteAddress: remoteAddress)
        let keepAlive = request.keepAlive && !core.isDraining
        let includeBody = request.method != .head
        let version = request.version
        let handle: @Sendable (HTTPRequest, RequestContext) async -> HTTPResponse
        switch core.responder.handler(for: request) {
        case .immediate(let immediate):
            complete(immediate(request, context), version: version, keepAlive: keepAlive, includeBody: includeBody)
            return
        case .immediateOrTask(let immediate, let task):
            if let response = immediate(request, context) {
                complete(response, version: version, keepAlive: keepAlive, includeBody: includeBody)
                return
            }
            handle = task
        case .task(let task):
            handle = task
        }
        let loop = self.loop
        // A read's handler on Swift's shared threads; a write's on the lower-priority ones, if any.
        Task(executorPreference: request.method.isSafe ? nil : core.writeExecutor) {
            let response = await handle(request, context)
            loop.execute { [self] in
                complete(response, version: version, keepAlive: keepAlive, includeBody: includeBody)
            }
        }
    }

    private func complete(_ response: HTTPResponse, version: HTTPVersion, keepAlive: Bool, includeBody: Bool) {
        guard !isClosed else { return }
        let keepAlive = keepAlive && !closeAfterWrite && !core.isDraining
        if !keepAlive { closeAfterWrite = true }
        let streamed = includeBody ? response.stream : nil
        // HTTP/1.0 has no chunks: a streamed body ends with the connection.
        if streamed != nil, version == .http1_0 { closeAfterWrite = true }
        HTTPResponseSerializer.serialize(
            response, version: version, keepAlive: keepAlive && !(streamed != nil && version == .http1_0),
            includeBody: includeBody, date: loop.dateCache.current(), requestID: current?.id, into: &output)
        current?.status = response.status.code
        current?.bytes = includeBody ? response.body.count : 0
        phase = streamed == nil ? .writing : .streaming
        deadline = loop.now + core.writeTimeout
        flush()
        if let streamed { pump(streamed, version: version) }
    }

    /// Asks `stream` for its parts one at a time, each only once the previous one has left.
    private func pump(_ stream: HTTPBodyStream, version: HTTPVersion) {
        let loop = self.loop
        Task { [self] in
            while true {
                let part: [UInt8]?
                do { part = try await stream.next() } catch {
                    loop.execute { [self] in close() }  // cut short: the client must not take it as whole
                    return
                }
                let more = await withCheckedContinuation { (written: CheckedContinuation<Bool, Never>) in
                    loop.execute { [self] in write(part, version: version, then: written) }
                }
                if !more { return }
            }
        }
    }

    /// Writes one part of a streamed body (nil: its end), and resumes `written` once it has left.
    private func write(_ part: [UInt8]?, version: HTTPVersion, then written: CheckedContinuation<Bool, Never>) {
        guard !isClosed, phase == .streaming else { return written.resume(returning: false) }
        HTTPResponseSerializer.chunk(part, version: version, into: &output)
        current?.bytes += part?.count ?? 0
        deadline = loop.now + core.writeTimeout
        guard part != nil else {
            phase = .writing
            written.resume(returning: false)
            return flush()
        }
        partWritten = written
        flush()
    }

    private func respondToParseError(_ error: HTTPParseError) {
        phase = .responding
        let requestID = core.requestIDs.next()
        current = (HTTPMethod(rawValue: "-"), "-", requestID, loop.now, 0, 0)
        closeAfterWrite = true
        core.metrics?.record(method: "-", route: "unparsed", status: error.status.code, nanoseconds: 0)
        complete(
            ErrorBody.response(status: error.status, code: error.code, message: error.message, requestID: requestID),
            version: .http1_1, keepAlive: false, includeBody: true)
    }

    // MARK: Writing

    private func flush() {
        while outputOffset < output.count {
            let result: Syscall.IOResult
            do {
                result = try output.withUnsafeBytes { buf throws(SystemError) in
                    try Syscall.io("send") {
                        send(fd, buf.baseAddress! + outputOffset, buf.count - outputOffset, Int32(MSG_NOSIGNAL))
                    }
                }
            } catch {
                close()
                return
            }
            switch result {
            case .processed(let n):
                outputOffset += n
                if phase == .writing || phase == .streaming { deadline = loop.now + core.writeTimeout }
            case .wouldBlock:
                setWriteInterest(true)
                return
            }
        }
        output.removeAll(keepingCapacity: output.capacity <= 64 * 1024)
        outputOffset = 0
        setWriteInterest(false)
        if phase == .writing { responseWritten() }
        if phase == .streaming, let written = partWritten {
            partWritten = nil
            deadline = .max  // the producer's turn: its own time (a database read) is not the client's
            written.resume(returning: true)
        }
    }

    private func responseWritten() {
        if let c = current, core.configuration.accessLog {
            core.logAccess(
                method: c.method, path: c.path, status: c.status, bytes: c.bytes,
                durationNanoseconds: Syscall.monotonicNanoseconds() - c.start, requestID: c.id, remoteAddress: remoteAddress)
        }
        current = nil
        if closeAfterWrite {
            close()
            return
        }
        phase = .awaitingHead
        deadline = loop.now + core.idleTimeout
        if !readingEnabled { setReading(true) }
        processInput()
    }

    // MARK: Interest, timeouts, closing

    private func setReading(_ on: Bool) {
        guard on != readingEnabled, !isClosed else { return }
        readingEnabled = on
        updateInterest()
    }

    private func setWriteInterest(_ on: Bool) {
        guard on != writeInterest, !isClosed else { return }
        writeInterest = on
        updateInterest()
    }

    private func updateInterest() {
        var events: UInt32 = receiptd_EPOLLRDHUP
        if readingEnabled { events |= receiptd_EPOLLIN }
        if writeInterest { events |= receiptd_EPOLLOUT }
        loop.modify(fd: fd, events: events)
    }

    /// Called by the loop's sweep when `now` is past ``deadline``.
    func timedOut() {
        switch phase {
        case .readingHead, .readingBody:
            setReading(false)
            phase = .responding
            let requestID = core.requestIDs.next()
            current = (HTTPMethod(rawValue: "-"), "-", requestID, loop.now, 0, 0)
            closeAfterWrite = true
            complete(
                ErrorBody.response(
                    status: .requestTimeout, code: "request_timeout",
                    message: "The request was not received in time.", requestID: requestID),
                version: .http1_1, keepAlive: false, includeBody: true)
        case .awaitingHead, .writing, .responding, .streaming:
            close()
        }
    }

    /// Graceful shutdown: close now if idle, else after the response in flight.
    func drain() {
        let idle = phase == .awaitingHead && output.count == outputOffset && inputStart == input.count
        if idle { close() } else { closeAfterWrite = true }
    }

    func close() {
        guard !isClosed else { return }
        isClosed = true
        partWritten?.resume(returning: false)
        partWritten = nil
        loop.deregister(fd: fd)
        Glibc.close(fd)
        owner.connectionClosed(self)
    }
}
