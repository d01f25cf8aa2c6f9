import CLinux
import Glibc
import Logging

/// The server's presence on one event loop: accepts from the shared listening socket
/// (`EPOLLEXCLUSIVE`, so one loop wakes per connection), keeps this loop's connections,
/// sweeps their timeouts, and drains them on shutdown. Loop-confined.
final class LoopAcceptor: EventHandler, @unchecked Sendable {
    private let listenFD: Int32
    private unowned let loop: EventLoop
    private let core: ServerCore
    private var connections: [Int32: Connection] = [:]
    private var accepting = false
    private var drainDeadline: UInt64?
    private let onFinished: @Sendable () -> Void

    /// Sent, then the socket closed, when ``HTTPServerConfiguration/maxConnections`` is reached.
    private static let overloaded: [UInt8] = {
        let body = #"{"error":{"code":"server_busy","message":"Too many open connections; retry shortly."}}"#
        return Array(
            ("HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 1\r\n"
                + "Connection: close\r\nContent-Length: \(body.utf8.count)\r\n\r\n" + body).utf8)
    }()

    init(listenFD: Int32, loop: EventLoop, core: ServerCore, onFinished: @escaping @Sendable () -> Void) {
        self.listenFD = listenFD
        self.loop = loop
        self.core = core
        self.onFinished = onFinished
    }

    /// Starts accepting; runs on the loop.
    func start() {
        loop.onTick = { [unowned self] in tick() }
        startAccepting()
    }

    private func startAccepting() {
        guard !accepting, drainDeadline == nil else { return }
        do {
            try loop.register(fd: listenFD, events: receiptd_EPOLLIN | receiptd_EPOLLEXCLUSIVE, handler: self)
            accepting = true
        } catch {
            core.logger.error("cannot watch the listening socket", metadata: ["error": "\(error)"])
        }
    }

    private func stopAccepting() {
        guard accepting else { return }
        loop.deregister(fd: listenFD)
        accepting = false
    }

    func handle(events: UInt32) {
        // Bounded batch, so one loop does not starve its own connections during a connect storm.
        for _ in 0..<64 {
            var address = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let fd = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    accept4(listenFD, $0, &length, Int32(SOCK_NONBLOCK.rawValue | SOCK_CLOEXEC.rawValue))
                }
            }
            if fd < 0 {
                switch errno {
                case EAGAIN, EWOULDBLOCK, EINTR, ECONNABORTED, EPROTO:
                    return
                case EMFILE, ENFILE, ENOBUFS, ENOMEM:
                    // Out of descriptors: pause accepting until the next tick instead of spinning.
                    core.logger.warning("accept paused: out of file descriptors", metadata: ["errno": "\(errno)"])
                    stopAccepting()
                    return
                default:
                    core.logger.error("accept failed", metadata: ["errno": "\(errno)"])
                    return
                }
            }
            guard core.reserveConnection() else {
                reject(fd)
                continue
            }
            var one: Int32 = 1
            setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            let connection = Connection(
                fd: fd, remoteAddress: SocketAddress.describe(address), loop: loop, owner: self, core: core)
            do {
                try loop.register(fd: fd, events: receiptd_EPOLLIN | receiptd_EPOLLRDHUP, handler: connection)
                connections[fd] = connection
            } catch {
                Glibc.close(fd)
                core.releaseConnection()
            }
        }
    }

    private func reject(_ fd: Int32) {
        // Read what the client already sent, so closing does not reset before it reads the 503.
        loop.scratch.withUnsafeMutableBytes { _ = read(fd, $0.baseAddress, $0.count) }
        Self.overloaded.withUnsafeBytes { _ = send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        shutdown(fd, Int32(SHUT_WR))
        Glibc.close(fd)
        core.metrics?.record(method: "-", route: "overloaded", status: 503, nanoseconds: 0)
    }

    func connectionClosed(_ connection: Connection) {
        connections[connection.fd] = nil
        core.releaseConnection()
        if drainDeadline != nil && connections.isEmpty { finish() }
    }

    private func tick() {
        let now = loop.now
        if !accepting && drainDeadline == nil { startAccepting() }
        if let drainDeadline, now >= drainDeadline {
            for connection in Array(connections.values) { connection.close() }
            return
        }
        var expired: [Connection] = []
        for connection in connections.values where now >= connection.deadline {
            expired.append(connection)
        }
        for connection in expired { connection.timedOut() }
    }

    /// Stops accepting and closes idle connections; busy ones close after their response.
    func drain(gracePeriod: UInt64) {
        guard drainDeadline == nil else { return }
        stopAccepting()
        drainDeadline = loop.now + gracePeriod
        for connection in Array(connections.values) { connection.drain() }
        if connections.isEmpty { finish() }
    }

    private var finished = false
    private func finish() {
        guard !finished else { return }
        finished = true
        loop.onTick = nil
        loop.stop()
        onFinished()
    }
}

/// Turning socket addresses into text for logs and ``RequestContext/remoteAddress``.
enum SocketAddress {
    static func describe(_ storage: sockaddr_storage) -> String {
        var storage = storage
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        let family = Int32(storage.ss_family)
        return withUnsafePointer(to: &storage) { pointer -> String in
            switch family {
            case AF_INET:
                return pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { sin in
                    var addr = sin.pointee.sin_addr
                    inet_ntop(AF_INET, &addr, &buffer, socklen_t(buffer.count))
                    return buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
                }
            case AF_INET6:
                return pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { sin6 in
                    var addr = sin6.pointee.sin6_addr
                    inet_ntop(AF_INET6, &addr, &buffer, socklen_t(buffer.count))
                    return buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
                }
            default:
                return "unknown"
            }
        }
    }
}
