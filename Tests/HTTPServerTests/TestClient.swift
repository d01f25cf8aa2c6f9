import Foundation
import Glibc

@testable import HTTPServer

/// A blocking loopback client for live tests. Its blocking calls run on a thread of their own,
/// never on Dispatch's global queues: on Linux, Swift concurrency's executor shares their threads,
/// so a test waiting for a response there would starve the server's handlers.
final class TestClient: @unchecked Sendable {
    let fd: Int32
    private var buffer: [UInt8] = []

    /// A parsed response.
    struct Response {
        var status: Int
        var headers: [(String, String)]
        var body: [UInt8]
        func header(_ name: String) -> String? {
            headers.first { $0.0.lowercased() == name.lowercased() }?.1
        }
        var text: String { String(decoding: body, as: UTF8.self) }
    }

    /// `receiveTimeoutMs` only catches a server that never answers: these tests check what the
    /// server does, not how fast (every test of the run shares two cooperative threads with the
    /// server's handlers, and on a loaded machine a handler may wait seconds for one).
    init(port: Int, receiveTimeoutMs: Int = 30_000) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        // No close here: every stored property is set, so deinit runs when init throws and closes
        // fd; closing it here too would close whatever socket reused the number meanwhile.
        guard rc == 0 else { throw SystemError(call: "connect", errno: errno) }
        var timeout = timeval(tv_sec: receiveTimeoutMs / 1000, tv_usec: (receiveTimeoutMs % 1000) * 1000)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { close(fd) }

    func send(_ text: String) { send(Array(text.utf8)) }

    func send(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { _ = Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    /// Reads one response: head, then `Content-Length` bytes (or to EOF without it).
    /// Nil when the connection closed or timed out first.
    func readResponse(headRequest: Bool = false) async -> Response? {
        await withCheckedContinuation { continuation in
            Thread { continuation.resume(returning: self.readResponseBlocking(headRequest: headRequest)) }.start()
        }
    }

    /// Whether the server closed the connection within the receive timeout: EOF, or a reset (a
    /// close with our unread bytes still in its buffer sends RST instead of FIN).
    func readsEOF() async -> Bool {
        await withCheckedContinuation { continuation in
            Thread {
                while true {
                    if !self.buffer.isEmpty { self.buffer.removeAll() }
                    let n = self.fill()
                    if n == 0 { return continuation.resume(returning: true) }
                    if n < 0 { return continuation.resume(returning: self.lastError == ECONNRESET) }
                }
            }.start()
        }
    }

    /// Reads until EOF; the number of bytes read, or nil when the connection did not end in time.
    func drainToEOF() async -> Int? {
        await withCheckedContinuation { continuation in
            Thread {
                var total = 0
                while true {
                    self.buffer.removeAll()
                    let n = self.fill()
                    // A server that gives up on a reader may reset rather than finish: an end all the same.
                    if n == 0 || (n < 0 && self.lastError == ECONNRESET) { return continuation.resume(returning: total) }
                    if n < 0 { return continuation.resume(returning: nil) }
                    total += n
                }
            }.start()
        }
    }

    /// Every byte until EOF (or a reset), unparsed; nil when the connection did not end in time.
    func readToEOF() async -> [UInt8]? {
        await withCheckedContinuation { continuation in
            Thread {
                while true {
                    let n = self.fill()
                    if n == 0 || (n < 0 && self.lastError == ECONNRESET) { return continuation.resume(returning: self.buffer) }
                    if n < 0 { return continuation.resume(returning: nil) }
                }
            }.start()
        }
    }

    /// errno of the last failed read.
    private(set) var lastError: Int32 = 0

    /// Bytes read, 0 at EOF, -1 on error or timeout (`lastError` says which).
    private func fill() -> Int {
        var chunk = [UInt8](repeating: 0, count: 65536)
        let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if n < 0 { lastError = errno }
        if n > 0 { buffer.append(contentsOf: chunk[0..<n]) }
        return n
    }

    private func readResponseBlocking(headRequest: Bool) -> Response? {
        while true {
            if let end = headEnd() {
                let head = String(decoding: buffer[0..<end], as: UTF8.self)
                var lines = head.components(separatedBy: "\r\n")
                let statusLine = lines.removeFirst().split(separator: " ")
                guard statusLine.count >= 2, let status = Int(statusLine[1]) else { return nil }
                var headers: [(String, String)] = []
                for line in lines where !line.isEmpty {
                    let parts = line.split(separator: ":", maxSplits: 1)
                    headers.append(
                        (String(parts[0]), parts.count > 1 ? String(parts[1]).trimmingCharacters(in: .whitespaces) : ""))
                }
                let length =
                    headRequest || status < 200 || status == 204 || status == 304
                    ? 0 : headers.first { $0.0.lowercased() == "content-length" }.flatMap { Int($0.1) }
                let bodyStart = end + 4
                if let length {
                    while buffer.count < bodyStart + length {
                        if fill() <= 0 { return nil }
                    }
                    let body = Array(buffer[bodyStart..<(bodyStart + length)])
                    buffer.removeFirst(bodyStart + length)
                    return Response(status: status, headers: headers, body: body)
                }
                while fill() > 0 {}
                let body = Array(buffer[bodyStart...])
                buffer.removeAll()
                return Response(status: status, headers: headers, body: body)
            }
            if fill() <= 0 { return nil }
        }
    }

    private func headEnd() -> Int? {
        guard buffer.count >= 4 else { return nil }
        for i in 0...(buffer.count - 4)
        where buffer[i] == 13 && buffer[i + 1] == 10 && buffer[i + 2] == 13 && buffer[i + 3] == 10 {
            return i
        }
        return nil
    }
}
