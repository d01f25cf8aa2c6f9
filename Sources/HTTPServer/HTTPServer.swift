import Glibc
public import Logging
import Synchronization

/// An HTTP/1.1 server on non-blocking POSIX sockets and epoll.
///
/// ``start()`` binds and starts one event-loop thread per configured loop; each loop accepts from
/// the shared listening socket and serves its connections without a thread per connection.
/// Handlers marked ``HTTPHandler/task(_:)`` run on Swift's cooperative pool, which the server
/// never blocks. ``shutdown()`` stops accepting, lets in-flight requests finish within
/// ``HTTPServerConfiguration/shutdownGracePeriod``, then closes everything.
public final class HTTPServer: Sendable {
    private let core: ServerCore
    private struct State {
        var listenFD: Int32 = -1
        var port = 0
        var loops: [(EventLoop, LoopAcceptor)] = []
        var running = 0
        var stopped = false
        var waiters: [CheckedContinuation<Void, Never>] = []
    }
    private let state = Mutex(State())

    /// - Parameter metrics: where requests refused before reaching `responder` are counted (a
    ///   ``Router`` counts the rest through its own ``Router/metrics``).
    public init(
        configuration: HTTPServerConfiguration, responder: any HTTPResponder, logger: Logger, metrics: HTTPMetrics? = nil
    ) {
        core = ServerCore(configuration: configuration, responder: responder, logger: logger, metrics: metrics)
    }

    /// The bound port (useful when configured with port 0); 0 before ``start()``.
    public var port: Int { state.withLock { $0.port } }

    /// Connections open right now.
    public var connectionCount: Int { core.connectionCount }

    /// Binds the listening socket and starts the event loops. Returns the bound port.
    @discardableResult
    public func start() throws -> Int {
        let configuration = core.configuration
        let fd = try Listener.bind(host: configuration.host, port: configuration.port, backlog: configuration.backlog)
        let port = Listener.boundPort(fd)
        let count = max(1, configuration.eventLoops)
        var loops: [(EventLoop, LoopAcceptor)] = []
        do {
            for _ in 0..<count {
                let loop = try EventLoop(tickInterval: configuration.sweepInterval)
                // The loops keep the server alive until they finish, even if its owner lets go
                // of it after shutdown(); loopFinished breaks the cycle.
                let acceptor = LoopAcceptor(listenFD: fd, loop: loop, core: core) { self.loopFinished() }
                loop.owner = acceptor
                loops.append((loop, acceptor))
            }
        } catch {
            close(fd)
            throw error
        }
        state.withLock {
            $0.listenFD = fd
            $0.port = port
            $0.loops = loops
            $0.running = loops.count
        }
        for (loop, acceptor) in loops {
            loop.start()
            loop.execute { acceptor.start() }
        }
        core.logger.info(
            "listening",
            metadata: ["host": "\(configuration.host)", "port": "\(port)", "event_loops": "\(count)"])
        return port
    }

    /// Begins a graceful shutdown; returns at once. Safe to call more than once, from any thread.
    public func shutdown() {
        guard core.beginDraining() else { return }
        let grace = core.configuration.shutdownGracePeriod.nanoseconds
        let loops = state.withLock { $0.loops }
        core.logger.info("shutting down", metadata: ["open_connections": "\(core.connectionCount)"])
        if loops.isEmpty {
            loopFinished(force: true)
            return
        }
        for (loop, acceptor) in loops {
            loop.execute { acceptor.drain(gracePeriod: grace) }
        }
    }

    /// Returns when every loop has stopped after ``shutdown()``.
    public func waitUntilStopped() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let resumeNow = state.withLock { s -> Bool in
                if s.stopped { return true }
                s.waiters.append(continuation)
                return false
            }
            if resumeNow { continuation.resume() }
        }
    }

    private func loopFinished(force: Bool = false) {
        let (waiters, fd) = state.withLock { s -> ([CheckedContinuation<Void, Never>], Int32) in
            s.running -= 1
            guard force || s.running <= 0, !s.stopped else { return ([], -1) }
            s.stopped = true
            s.loops = []
            let w = s.waiters
            s.waiters = []
            let fd = s.listenFD
            s.listenFD = -1
            return (w, fd)
        }
        if fd >= 0 {
            close(fd)
            core.logger.info("stopped")
        }
        for waiter in waiters { waiter.resume() }
    }
}

/// Creating the listening socket.
enum Listener {
    static func bind(host: String, port: Int, backlog: Int32) throws(SystemError) -> Int32 {
        var v4 = sockaddr_in()
        var v6 = sockaddr_in6()
        let family: Int32
        if inet_pton(AF_INET, host, &v4.sin_addr) == 1 {
            family = AF_INET
            v4.sin_family = sa_family_t(AF_INET)
            v4.sin_port = in_port_t(UInt16(truncatingIfNeeded: port).bigEndian)
        } else if inet_pton(AF_INET6, host, &v6.sin6_addr) == 1 {
            family = AF_INET6
            v6.sin6_family = sa_family_t(AF_INET6)
            v6.sin6_port = in_port_t(UInt16(truncatingIfNeeded: port).bigEndian)
        } else {
            throw SystemError(call: "inet_pton", errno: EINVAL)
        }
        let fd = try Syscall.call("socket") {
            socket(family, Int32(SOCK_STREAM.rawValue | SOCK_NONBLOCK.rawValue | SOCK_CLOEXEC.rawValue), 0)
        }
        do {
            var one: Int32 = 1
            try Syscall.call("setsockopt") {
                setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
            }
            if family == AF_INET {
                try Syscall.call("bind") {
                    withUnsafePointer(to: &v4) {
                        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                            Glibc.bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                        }
                    }
                }
            } else {
                try Syscall.call("bind") {
                    withUnsafePointer(to: &v6) {
                        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                            Glibc.bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size))
                        }
                    }
                }
            }
            try Syscall.call("listen") { listen(fd, backlog) }
            return fd
        } catch {
            close(fd)
            throw error
        }
    }

    static func boundPort(_ fd: Int32) -> Int {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        let family = Int32(storage.ss_family)
        return withUnsafePointer(to: &storage) { pointer in
            if family == AF_INET6 {
                return pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) {
                    Int(UInt16(bigEndian: $0.pointee.sin6_port))
                }
            }
            return pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) {
                Int(UInt16(bigEndian: $0.pointee.sin_port))
            }
        }
    }
}
