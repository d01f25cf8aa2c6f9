import CLinux
import Glibc
import Synchronization

/// Something registered with an ``EventLoop`` for readiness events on its file descriptor.
protocol EventHandler: AnyObject {
    /// Called on the loop's thread with the epoll event mask.
    func handle(events: UInt32)
}

/// One thread that waits on epoll and runs everything for the file descriptors registered with it.
///
/// Loop-confined state (handlers, connections, the date cache) is touched only on the loop's own
/// thread; other threads reach the loop through ``execute(_:)``, which queues a closure and wakes
/// the loop through an eventfd. Marked `@unchecked Sendable` for that reason.
final class EventLoop: @unchecked Sendable {
    private let epfd: Int32
    private let wakeFD: Int32
    private let queue = Mutex<[@Sendable () -> Void]>([])
    private let wakePending = Atomic<Bool>(false)
    private var handlers: [Int32: any EventHandler] = [:]
    private var running = true

    /// Read buffer shared by every connection of this loop (loop-confined).
    var scratch = [UInt8](repeating: 0, count: 64 * 1024)
    /// `Date` header cache (loop-confined).
    var dateCache = HTTPDateCache()
    /// Monotonic time at the start of the current iteration, in nanoseconds.
    private(set) var now: UInt64 = Syscall.monotonicNanoseconds()
    /// How often ``onTick`` runs, in nanoseconds.
    let tickInterval: UInt64
    /// Runs on the loop at least every ``tickInterval`` (timeouts are swept here).
    var onTick: (() -> Void)?
    /// Kept alive while the loop runs and released when its thread ends, so that what the loop
    /// calls into (its acceptor, through `onTick` and the handlers) outlives every call.
    var owner: AnyObject?
    private var nextTick: UInt64 = 0

    init(tickInterval: UInt64) throws(SystemError) {
        self.tickInterval = tickInterval
        epfd = try Syscall.call("epoll_create1") { epoll_create1(receiptd_EPOLL_CLOEXEC) }
        do {
            wakeFD = try Syscall.call("eventfd") { eventfd(0, receiptd_EFD_NONBLOCK | receiptd_EFD_CLOEXEC) }
        } catch {
            close(epfd)
            throw error
        }
        var event = epoll_event()
        event.events = receiptd_EPOLLIN
        event.data.fd = wakeFD
        _ = epoll_ctl(epfd, EPOLL_CTL_ADD, wakeFD, &event)
    }

    deinit {
        close(wakeFD)
        close(epfd)
    }

    // MARK: Registration (loop thread only)

    func register(fd: Int32, events: UInt32, handler: any EventHandler) throws(SystemError) {
        var event = epoll_event()
        event.events = events
        event.data.fd = fd
        try Syscall.call("epoll_ctl") { epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &event) }
        handlers[fd] = handler
    }

    func modify(fd: Int32, events: UInt32) {
        var event = epoll_event()
        event.events = events
        event.data.fd = fd
        _ = epoll_ctl(epfd, EPOLL_CTL_MOD, fd, &event)
    }

    func deregister(fd: Int32) {
        _ = epoll_ctl(epfd, EPOLL_CTL_DEL, fd, nil)
        handlers[fd] = nil
    }

    // MARK: Cross-thread

    /// Runs `task` on the loop's thread, soon. Safe from any thread.
    func execute(_ task: @escaping @Sendable () -> Void) {
        queue.withLock { $0.append(task) }
        if !wakePending.exchange(true, ordering: .acquiringAndReleasing) {
            var one: UInt64 = 1
            _ = write(wakeFD, &one, 8)
        }
    }

    /// Starts the loop on a thread of its own; the thread ends when the loop stops.
    func start() {
        let box = Unmanaged.passRetained(self)
        var tid = pthread_t()
        let rc = pthread_create(
            &tid, nil,
            { arg in
                let loop = Unmanaged<EventLoop>.fromOpaque(arg!).takeRetainedValue()
                loop.run()
                return nil
            }, box.toOpaque())
        precondition(rc == 0, "pthread_create failed: \(rc)")
        pthread_detach(tid)
    }

    /// Asks the loop to return after the current iteration.
    func stop() {
        execute { [self] in running = false }
    }

    // MARK: The loop

    private func run() {
        let capacity = 256
        let events = UnsafeMutablePointer<epoll_event>.allocate(capacity: capacity)
        defer { events.deallocate() }
        nextTick = now + tickInterval
        while running {
            now = Syscall.monotonicNanoseconds()
            let waitMs = Int32(clamping: (nextTick > now ? nextTick - now : 0) / 1_000_000 + 1)
            let n = epoll_wait(epfd, events, Int32(capacity), waitMs)
            now = Syscall.monotonicNanoseconds()
            if n > 0 {
                for i in 0..<Int(n) {
                    let fd = events[i].data.fd
                    if fd == wakeFD {
                        var value: UInt64 = 0
                        _ = read(wakeFD, &value, 8)
                        continue
                    }
                    handlers[fd]?.handle(events: events[i].events)
                }
            }
            runQueued()
            if now >= nextTick {
                onTick?()
                nextTick = now + tickInterval
            }
        }
        runQueued()
        onTick = nil
        owner = nil
    }

    private func runQueued() {
        wakePending.store(false, ordering: .releasing)
        let tasks = queue.withLock { q -> [@Sendable () -> Void] in
            let t = q
            q.removeAll(keepingCapacity: true)
            return t
        }
        for task in tasks { task() }
    }
}
