import Foundation

/// One HTTP/1.1 exchange with a server on 127.0.0.1, on a thread of its own (never Dispatch's
/// global queues: on Linux, Swift concurrency's executor shares their threads, and one blocked in
/// recv starves the server's handlers). `raw` must ask to close; every response is scanned by
/// ``SecretAudit``.
package func send(_ port: Int, _ raw: String) async throws -> (status: Int, body: String, head: String) {
    try await withCheckedThrowingContinuation { continuation in
        Thread {
            continuation.resume(
                with: Result {
                    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
                    defer { close(fd) }
                    var address = sockaddr_in()
                    address.sin_family = sa_family_t(AF_INET)
                    address.sin_port = in_port_t(UInt16(port).bigEndian)
                    address.sin_addr.s_addr = inet_addr("127.0.0.1")
                    let rc = withUnsafePointer(to: &address) {
                        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                            connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                        }
                    }
                    guard rc == 0 else { throw CocoaError(.fileReadUnknown) }
                    let request = Array(raw.utf8)
                    _ = request.withUnsafeBytes { Foundation.send(fd, $0.baseAddress, $0.count, 0) }
                    var data: [UInt8] = []
                    var chunk = [UInt8](repeating: 0, count: 4096)
                    while true {
                        let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                        if n <= 0 { break }
                        data += chunk[0..<n]
                    }
                    let text = String(decoding: data, as: UTF8.self)
                    SecretAudit.shared.scan(text, from: "response to \(raw.prefix(while: { $0 != "\r" }))")
                    let status = Int(text.split(separator: " ")[1]) ?? 0
                    let parts = text.components(separatedBy: "\r\n\r\n")
                    return (status, parts.dropFirst().joined(separator: "\r\n\r\n"), parts[0])
                })
        }.start()
    }
}

/// GET `path`, with a bearer `key` when given.
package func get(_ port: Int, _ path: String, key: String? = nil, headers: String = "") async throws -> (
    status: Int, body: String
) {
    let auth = key.map { "Authorization: Bearer \($0)\r\n" } ?? ""
    let r = try await send(port, "GET \(path) HTTP/1.1\r\nHost: t\r\n\(auth)\(headers)Connection: close\r\n\r\n")
    return (r.status, r.body)
}

/// POST `body` to `path`, with a bearer `key` when given.
package func post(
    _ port: Int, _ path: String, _ body: String, key: String? = nil, contentType: String = "application/json"
) async throws -> (status: Int, body: String, head: String) {
    let auth = key.map { "Authorization: Bearer \($0)\r\n" } ?? ""
    return try await send(
        port,
        "POST \(path) HTTP/1.1\r\nHost: t\r\n\(auth)Content-Type: \(contentType)\r\nContent-Length: \(body.utf8.count)\r\n"
            + "Connection: close\r\n\r\n\(body)")
}

/// A receipt the App Store simulator understands: base64 of `scenario:tag` (AppStoreSimulator).
package func simulatedReceipt(_ content: String) -> String { Data(content.utf8).base64EncodedString() }

/// POST /v1/receipts's body for `user` with the simulated receipt `content`; `extra` is more
/// members, written as JSON text beginning with a comma.
package func receiptBody(user: String, _ content: String, extra: String = "") -> String {
    #"{"app_user_id":"\#(user)","receipt_data":"\#(simulatedReceipt(content))"\#(extra)}"#
}

/// Posts the simulated receipt `content` for `user` with the public key.
package func postReceipt(_ port: Int, user: String, _ content: String) async throws -> (status: Int, body: String) {
    let r = try await post(port, "/v1/receipts", receiptBody(user: user, content), key: TestSecrets.publicKey)
    return (r.status, r.body)
}
