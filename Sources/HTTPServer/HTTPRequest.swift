/// A complete request: head and de-chunked body.
public struct HTTPRequest: Sendable {
    public var method: HTTPMethod
    /// The request-target exactly as sent (RFC 9112 §3.2), e.g. `/v1/x?y=1`.
    public var target: String
    public var version: HTTPVersion
    public var headers: HTTPHeaders
    /// The body, de-chunked; empty when there is none.
    public var body: [UInt8]
    /// Trailer fields of a chunked body, if any were sent.
    public var trailers: HTTPHeaders

    public init(
        method: HTTPMethod, target: String, version: HTTPVersion = .http1_1,
        headers: HTTPHeaders = [:], body: [UInt8] = [], trailers: HTTPHeaders = [:]
    ) {
        self.method = method
        self.target = target
        self.version = version
        self.headers = headers
        self.body = body
        self.trailers = trailers
    }

    /// The path part of the target, before any `?` (a byte: HTTP's delimiters are found in the
    /// UTF-8 view, as other parsers find them). For absolute-form (`http://host/p?q`, which
    /// RFC 9112 §3.2.2 requires a server to accept) the scheme and authority are dropped: the host
    /// part plays no role in routing, and an empty path is `/`.
    public var path: Substring {
        let rest = afterAuthority
        let path = rest.utf8.firstIndex(of: UInt8(ascii: "?")).map { rest[..<$0] } ?? rest
        return path.isEmpty && rest.startIndex != target.startIndex ? "/" : path
    }

    /// The target from its path on: all of it in origin-form, what follows `scheme://authority`
    /// in absolute-form (the parser admitted only those, `*` aside).
    private var afterAuthority: Substring {
        guard target.utf8.first != UInt8(ascii: "/"), let colon = target.firstIndex(of: ":"),
            target[colon...].hasPrefix("://")
        else { return target[...] }
        let authority = target[target.index(colon, offsetBy: 3)...]
        return authority[(authority.firstIndex { $0 == "/" || $0 == "?" } ?? authority.endIndex)...]
    }

    /// The raw query string after `?`, if any.
    public var query: Substring? {
        let rest = afterAuthority
        guard let q = rest.utf8.firstIndex(of: UInt8(ascii: "?")) else { return nil }
        return rest[rest.utf8.index(after: q)...]
    }

    /// The percent-decoded value of the first `name=value` pair of the query (`name` alone gives
    /// ""); nil when absent or not decodable.
    public func queryValue(_ name: String) -> String? {
        guard let query else { return nil }
        for pair in query.split(byte: UInt8(ascii: "&"), omittingEmpty: true) {
            let (key, value) =
                pair.utf8.firstIndex(of: UInt8(ascii: "=")).map { (pair[..<$0], pair[pair.utf8.index(after: $0)...]) }
                ?? (pair, "")
            if PercentDecoding.decode(key) == name { return PercentDecoding.decode(value) }
        }
        return nil
    }

    /// Whether the connection stays open after this request (RFC 9112 §9.3): HTTP/1.1 unless
    /// `Connection: close`; HTTP/1.0 only with `Connection: keep-alive`.
    public var keepAlive: Bool {
        if version == .http1_1 { return !headers.containsToken("close", in: "Connection") }
        return headers.containsToken("keep-alive", in: "Connection")
            && !headers.containsToken("close", in: "Connection")
    }
}

/// Percent-decoding of path segments (RFC 3986 §2.1).
public enum PercentDecoding {
    /// Decodes `%XX` escapes; nil when an escape is malformed or the result is not UTF-8.
    public static func decode<S: StringProtocol>(_ s: S) -> String? {
        guard s.utf8.contains(UInt8(ascii: "%")) else {
            return String(s)
        }
        var out: [UInt8] = []
        out.reserveCapacity(s.utf8.count)
        var it = s.utf8.makeIterator()
        while let c = it.next() {
            if c == UInt8(ascii: "%") {
                guard let h = it.next().flatMap(hexValue), let l = it.next().flatMap(hexValue) else { return nil }
                out.append(h << 4 | l)
            } else {
                out.append(c)
            }
        }
        return String(validating: out, as: UTF8.self)
    }

    @inline(__always)
    static func hexValue(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
