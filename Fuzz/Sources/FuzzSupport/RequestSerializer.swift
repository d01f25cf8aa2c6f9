/// Writes a parsed request back as bytes: the head as parsed, the body with the framing its
/// headers name (one chunk and the trailers when `Transfer-Encoding` is present).
public enum RequestSerializer {
    public static func serialize(_ m: ParseTrace.Message) -> [UInt8] {
        var out: [UInt8] = []
        func put(_ s: String) { out.append(contentsOf: s.utf8) }
        put("\(m.method) \(m.target) HTTP/\(m.version.major).\(m.version.minor)\r\n")
        for field in m.headers { put("\(field.name): \(field.value)\r\n") }
        put("\r\n")
        if m.headers.contains(where: { $0.name.lowercased() == "transfer-encoding" }) {
            if !m.body.isEmpty {
                put(String(m.body.count, radix: 16) + "\r\n")
                out.append(contentsOf: m.body)
                put("\r\n")
            }
            put("0\r\n")
            for field in m.trailers { put("\(field.name): \(field.value)\r\n") }
            put("\r\n")
        } else {
            out.append(contentsOf: m.body)
        }
        return out
    }
}
