import AppStoreSimulator
import Foundation

/// One HTTP/1.1 exchange with a server on 127.0.0.1, on a thread of its own (never Dispatch's
/// global queues: on Linux, Swift concurrency's executor shares their threads, and one blocked in
/// recv starves the server's handlers). `raw` must ask to close; every response is scanned by
/// ``SecretAudit``.
package func send(_ port: Int, _ raw: String) async throws -> Reply {
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
                    let body = parts.dropFirst().joined(separator: "\r\n\r\n")
                    let chunked = parts[0].lowercased().contains("transfer-encoding: chunked")
                    return Reply(status: status, body: chunked ? try dechunked(body) : body, head: parts[0])
                })
        }.start()
    }
}

/// A chunked body's content (RFC 9112 §7.1); throws when it does not end with the last chunk
/// (a streamed response cut short).
private func dechunked(_ body: String) throws -> String {
    let bytes = Array(body.utf8)
    var at = 0
    var out: [UInt8] = []
    while true {
        guard let cr = bytes[at...].firstIndex(of: 13), cr + 1 < bytes.count, bytes[cr + 1] == 10,
            let size = Int(String(decoding: bytes[at..<cr], as: UTF8.self), radix: 16), cr + 2 + size + 2 <= bytes.count
        else { throw CocoaError(.fileReadCorruptFile) }
        if size == 0 { return String(decoding: out, as: UTF8.self) }
        out += bytes[(cr + 2)..<(cr + 2 + size)]
        at = cr + 2 + size + 2
    }
}

/// A response as tests read it.
package struct Reply: Sendable {
    package var status: Int
    package var body: String
    /// The status line and headers.
    package var head: String

    /// The body as a JSON object; empty when it is not one.
    package var json: [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(body.utf8))) as? [String: Any] ?? [:]
    }

    /// The error body's stable `code`.
    package var errorCode: String? { (json["error"] as? [String: Any])?["code"] as? String }
}

/// One request over loopback, with a bearer `key` when given; a body is sent with its length
/// and `contentType`. Every other helper here goes through this one.
package func request(
    _ port: Int, _ method: String, _ target: String, _ body: String = "", key: String? = nil, headers: String = "",
    contentType: String = "application/json"
) async throws -> Reply {
    let auth = key.map { "Authorization: Bearer \($0)\r\n" } ?? ""
    let content = body.isEmpty && method == "GET" ? "" : "Content-Type: \(contentType)\r\nContent-Length: \(body.utf8.count)\r\n"
    return try await send(
        port, "\(method) \(target) HTTP/1.1\r\nHost: t\r\n\(auth)\(headers)\(content)Connection: close\r\n\r\n\(body)")
}

/// GET `target`, with a bearer `key` when given.
package func get(_ port: Int, _ target: String, key: String? = nil, headers: String = "") async throws -> Reply {
    try await request(port, "GET", target, key: key, headers: headers)
}

/// POST `body` to `path`, with a bearer `key` when given.
package func post(
    _ port: Int, _ path: String, _ body: String, key: String? = nil, contentType: String = "application/json"
) async throws -> Reply {
    try await request(port, "POST", path, body, key: key, contentType: contentType)
}

/// GET /v1/subscribers/`user``suffix` (`?explain=true`, `/events`, …) as a backend does, with the secret key.
package func subscriber(
    _ port: Int, _ user: String, _ suffix: String = "", key: String = TestSecrets.secretKey, headers: String = ""
) async throws -> Reply {
    try await get(port, "/v1/subscribers/\(user)\(suffix)", key: key, headers: headers)
}

/// The entitlement `name` of a subscriber document.
package func entitlement(_ document: [String: Any], _ name: String) -> [String: Any]? {
    (document["entitlements"] as? [String: Any])?[name] as? [String: Any]
}

/// A receipt the App Store simulator understands: base64 of `scenario:tag` (AppStoreSimulator).
package func simulatedReceipt(_ content: String) -> String { Scenario.receiptData(content) }

/// POST /v1/receipts's body for `user` with the simulated receipt `content`; `extra` is more
/// members, written as JSON text beginning with a comma.
package func receiptBody(user: String, _ content: String, extra: String = "") -> String {
    #"{"app_user_id":"\#(user)","receipt_data":"\#(simulatedReceipt(content))"\#(extra)}"#
}

/// POST /v1/receipts with `body` as the app does, with the public key.
package func postReceipts(
    _ port: Int, _ body: String, key: String? = TestSecrets.publicKey, contentType: String = "application/json"
) async throws -> Reply {
    try await post(port, "/v1/receipts", body, key: key, contentType: contentType)
}

/// Posts the simulated receipt `content` for `user` with the public key.
package func postReceipt(_ port: Int, user: String, _ content: String) async throws -> Reply {
    try await postReceipts(port, receiptBody(user: user, content))
}
