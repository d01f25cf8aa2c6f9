import Foundation
import Subprocess
import SystemPackage
import Testing

/// The http-inspect binary built beside this test bundle.
private let binary = URL(fileURLWithPath: Bundle.main.executablePath ?? CommandLine.arguments[0])
    .deletingLastPathComponent().appendingPathComponent("http-inspect")

/// Starts http-inspect in `mode` on a free port, runs `body` with the port, then stops it with SIGTERM.
/// Subprocess, not Foundation's Process, which crashes reading `/proc/self/fd` once the test process
/// holds ~1,400 descriptors (as the server tests running beside these do).
private func withServer(_ mode: String, _ body: (Int) async throws -> Void) async throws -> TerminationStatus {
    try await run(
        .path(FilePath(binary.path)), arguments: [mode], environment: .custom(["PORT": "0", "EVENT_LOOPS": "1"]),
        input: .none, output: .sequence, error: .discarded
    ) { execution in
        var firstLine = ""
        for try await line in execution.standardOutput.strings() {
            firstLine = line
            break
        }
        let port = Int(firstLine.split(separator: ":").last?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "") ?? 0
        #expect(port > 0, "first line: \(firstLine)")
        if port > 0 { try await body(port) }
        try execution.send(signal: .terminate)
    }.terminationStatus
}

/// Runs blocking work (a pipe read, a process wait) on a thread of its own. Never on Dispatch's
/// global queues: on Linux, Swift concurrency's executor shares their threads.
private func onOwnThread<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        Thread { continuation.resume(returning: work()) }.start()
    }
}

/// Sends `request` on a new connection and reads until the server closes it (or 2 s pass).
private func exchange(port: Int, _ request: String) async -> String {
    await onOwnThread {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var timeout = timeval(tv_sec: 2, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { return "connect failed" }
        let bytes = Array(request.utf8)
        _ = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) }
        var response: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = recv(fd, &buffer, buffer.count, 0)
            if n <= 0 { break }
            response += buffer[0..<n]
        }
        return String(decoding: response, as: UTF8.self)
    }
}

@Suite("http-inspect binary", .serialized)
struct MainTests {
    @Test func inspectAnswersWithTheRequestAsRead() async throws {
        let status = try await withServer("inspect") { port in
            let response = await exchange(
                port: port,
                "POST /p?q=1 HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n3\r\nabc\r\n0\r\n\r\n")
            #expect(response.hasPrefix("HTTP/1.1 200 OK\r\n"))
            let json = try #require(response.split(separator: "\r\n\r\n", maxSplits: 1).last)
            let object = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
            let base64 = { (s: String) in Data(s.utf8).base64EncodedString() }
            #expect(object["uri"] as? String == base64("/p?q=1"))
            #expect(object["body"] as? String == base64("abc"))
            #expect((object["headers"] as? [[String]])?.first == [base64("Host"), base64("h")])
        }
        #expect(status == .exited(0))
    }

    @Test func echoAnswersTheDechunkedBody() async throws {
        let status = try await withServer("echo") { port in
            let response = await exchange(
                port: port,
                "PUT /any/where HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n2\r\nhi\r\n3\r\n!!!\r\n0\r\n\r\n"
            )
            #expect(response.hasPrefix("HTTP/1.1 200 OK\r\n"))
            #expect(response.contains("Content-Length: 5\r\n"))
            #expect(response.hasSuffix("\r\n\r\nhi!!!"))
        }
        #expect(status == .exited(0))
    }

    @Test func aRefusedRequestGetsAJSONErrorAndAClose() async throws {
        _ = try await withServer("inspect") { port in
            let response = await exchange(port: port, "GET / HTTP/1.1\r\nHost: h\r\nX: a\r\n folded\r\n\r\n")
            #expect(response.hasPrefix("HTTP/1.1 400 Bad Request\r\n"))
            #expect(response.contains("Connection: close\r\n"))
            #expect(response.contains(#""code":"malformed_request""#))
        }
    }

    @Test func anUnknownModeIsAUsageError() async throws {
        let result = try await run(.path(FilePath(binary.path)), arguments: ["nonsense"], output: .discarded)
        #expect(result.terminationStatus == .exited(64))
    }
}
