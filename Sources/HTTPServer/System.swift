import CLinux
import Glibc

/// Every syscall the server makes goes through here: `EINTR` is retried, `EAGAIN` becomes a value,
/// anything else becomes a ``SystemError`` carrying the call's name and `errno`.
enum Syscall {
    /// Outcome of a non-blocking read or write.
    enum IOResult: Equatable {
        case processed(Int)
        case wouldBlock
    }

    /// Runs `body` until it does not fail with `EINTR`; throws on any other negative result.
    @discardableResult
    @inline(__always)
    static func call<T: BinaryInteger>(_ name: StaticString, _ body: () -> T) throws(SystemError) -> T {
        while true {
            let result = body()
            if result >= 0 { return result }
            let code = errno
            if code == EINTR { continue }
            throw SystemError(call: name, errno: code)
        }
    }

    /// Like ``call(_:_:)`` but `EAGAIN`/`EWOULDBLOCK` are reported as ``IOResult/wouldBlock``.
    @inline(__always)
    static func io(_ name: StaticString, _ body: () -> Int) throws(SystemError) -> IOResult {
        while true {
            let result = body()
            if result >= 0 { return .processed(result) }
            let code = errno
            if code == EINTR { continue }
            if code == EAGAIN || code == EWOULDBLOCK { return .wouldBlock }
            throw SystemError(call: name, errno: code)
        }
    }

    /// Monotonic clock in nanoseconds; the server's only notion of time for timeouts.
    @inline(__always)
    static func monotonicNanoseconds() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
    }
}

/// A failed system call: its name and `errno`.
public struct SystemError: Error, CustomStringConvertible, Sendable {
    /// The C function that failed, e.g. `bind`.
    public let call: String
    /// The `errno` it left.
    public let errno: Int32

    init(call: StaticString, errno: Int32) {
        self.call = "\(call)"
        self.errno = errno
    }

    public var description: String {
        "\(call) failed: \(String(cString: strerror(errno))) (errno \(errno))"
    }
}
