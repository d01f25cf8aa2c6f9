/// Writes a response head and body into one buffer, so each response leaves in one `send`
/// (see server-notes: separate head and body writes stall on delayed ACKs).
enum HTTPResponseSerializer {
    /// Header names the server owns; a responder's values for them are ignored.
    private static let owned = ["Content-Length", "Connection", "Date", "Transfer-Encoding"]

    static func serialize(
        _ response: HTTPResponse, version: HTTPVersion, keepAlive: Bool, includeBody: Bool,
        date: String, requestID: String?, into out: inout [UInt8]
    ) {
        out.reserveCapacity(out.count + 160 + response.body.count)
        append("HTTP/1.1 ", to: &out)
        append(String(response.status.code), to: &out)
        out.append(.space)
        appendSanitized(response.status.reason, to: &out)
        append("\r\n", to: &out)
        for field in response.headers.fields
        where !owned.contains(where: { HTTPHeaders.namesEqual($0, field.name) })
            && !(requestID != nil && HTTPHeaders.namesEqual(field.name, "X-Request-Id"))
        {
            appendSanitized(field.name, to: &out)
            append(": ", to: &out)
            appendSanitized(field.value, to: &out)
            append("\r\n", to: &out)
        }
        if let requestID {
            append("X-Request-Id: ", to: &out)
            append(requestID, to: &out)
            append("\r\n", to: &out)
        }
        let status = response.status.code
        if response.stream != nil {
            if version != .http1_0 { append("Transfer-Encoding: chunked\r\n", to: &out) }  // 1.0: until the close
        } else if status >= 200 && status != 204 && status != 304 {
            append("Content-Length: ", to: &out)
            append(String(response.body.count), to: &out)
            append("\r\n", to: &out)
        }
        if !keepAlive {
            append("Connection: close\r\n", to: &out)
        } else if version == .http1_0 {
            append("Connection: keep-alive\r\n", to: &out)
        }
        append("Date: ", to: &out)
        append(date, to: &out)
        append("\r\n\r\n", to: &out)
        if includeBody && status != 204 && status != 304 && response.stream == nil {
            out.append(contentsOf: response.body)
        }
    }

    /// One part of a streamed body: a chunk (RFC 9112 §7.1), or the bytes as they are to HTTP/1.0;
    /// nil `part` ends the body (the last chunk; nothing for HTTP/1.0, whose body ends at the close).
    static func chunk(_ part: [UInt8]?, version: HTTPVersion, into out: inout [UInt8]) {
        guard version != .http1_0 else {
            out.append(contentsOf: part ?? [])
            return
        }
        guard let part else {
            append("0\r\n\r\n", to: &out)
            return
        }
        guard !part.isEmpty else { return }  // an empty chunk would end the body
        append(String(part.count, radix: 16), to: &out)
        append("\r\n", to: &out)
        out.append(contentsOf: part)
        append("\r\n", to: &out)
    }

    /// `100 Continue` interim response (RFC 9110 §15.2.1).
    static let continueResponse: [UInt8] = Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)

    @inline(__always)
    private static func append(_ s: String, to out: inout [UInt8]) {
        out.append(contentsOf: s.utf8)
    }

    /// Responder-supplied text may not split the response: CR, LF and NUL become spaces.
    private static func appendSanitized(_ s: String, to out: inout [UInt8]) {
        for c in s.utf8 {
            out.append(c == .cr || c == .lf || c == 0 ? .space : c)
        }
    }
}
