/// An incremental HTTP/1.1 request parser (RFC 9112). Pure: bytes in, events out, no I/O.
///
/// The caller passes every unconsumed byte of the current request, starting where the request
/// starts, each time more arrive; the parser remembers how far it got, so feeding one byte at a
/// time costs the same as feeding the whole request. After `.request(_, consumed:)` the caller
/// drops `consumed` bytes and calls again for a pipelined next request.
///
/// Framing policy (strict, one rule each, all answered with an error and then a close):
/// - bare LF or bare CR in the head, obs-fold, whitespace before a field's colon, control bytes in
///   a field value: 400 (§2.2, §5.1, §5.2);
/// - both `Content-Length` and `Transfer-Encoding`, any `Transfer-Encoding` other than exactly
///   `chunked`, `Transfer-Encoding` in HTTP/1.0, a `Content-Length` that is repeated, a list, or
///   not digits, a tab anywhere in either field: 400 (§6.1–6.3); a tab anywhere in a `Connection`
///   field: 400 (llhttp does not read `keep-alive` or `close` followed by a tab as the token, so a
///   front proxy might keep or close a connection we read the other way);
/// - chunk sizes that are not bare hex (whitespace, signs) or overflow: 400 / 413; fields that
///   control framing, routing or the connection (`headerOnlyFields`) among trailers: 400 (§7.1);
/// - HTTP/1.1 without exactly one `Host`, or HTTP/1.0 with several: 400 (§3.2);
/// - versions other than 1.0 and 1.1: 505; `Expect` other than `100-continue`: 417;
/// - one empty line before the request line is ignored, a second is an error (§2.2);
/// - a method other than GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS: 501 (RFC 9110 §9.1);
/// - a request-target that is not origin-form, absolute-form or `*` (OPTIONS only), or has a byte
///   RFC 3986 does not allow there: 400 (§3.2); authority-form is CONNECT's, which is not served;
/// - any chunk extension (`;…` after a chunk size): 400 (parsers disagree on their syntax).
public struct HTTPRequestParser: Sendable {
    /// What the bytes so far amount to.
    public enum Event: Sendable {
        /// Not a whole request yet.
        case needMore
        /// The head is complete, the client sent `Expect: 100-continue` and awaits an interim
        /// `100 Continue` before the body; reported once per request.
        case sendContinue
        /// A whole request, which took the first `consumed` bytes.
        case request(HTTPRequest, consumed: Int)
        /// The bytes cannot be a valid request; answer with `error.status` and close.
        case failure(HTTPParseError)
    }

    public let limits: HTTPParserLimits

    private enum Phase: Sendable { case head, lengthBody, chunkSize, chunkData, chunkDataEnd, trailers, failed }

    private struct Head: Sendable {
        var method: HTTPMethod
        var target: String
        var version: HTTPVersion
        var headers: HTTPHeaders
        var end: Int
        var expectContinue: Bool
    }

    private var phase: Phase = .head
    private var failure: HTTPParseError?
    // Head scanning, relative to the request's first byte.
    private var position = 0
    private var lineStart = 0
    private var start = 0
    private var requestLineEnd: Int?
    // Body.
    private var head: Head?
    private var cursor = 0
    private var remaining = 0
    private var decoded: [UInt8] = []
    private var trailers = HTTPHeaders()
    private var continueSent = false

    public init(limits: HTTPParserLimits = HTTPParserLimits()) {
        self.limits = limits
    }

    /// Whether the head of the current request is complete and its body is being read.
    public var isReadingBody: Bool { head != nil && phase != .failed }

    /// Parses `bytes`: every unconsumed byte, from the current request's first byte.
    public mutating func parse(_ bytes: UnsafeBufferPointer<UInt8>) -> Event {
        switch phase {
        case .failed:
            return .failure(failure!)
        case .head:
            switch scanHead(bytes) {
            case .some(.failure(let error)): return fail(error)
            case .none: return .needMore
            case .some(let event): return event
            }
        default:
            return parseBody(bytes)
        }
    }

    /// Parses a byte array; a convenience for tests and small inputs.
    public mutating func parse(_ bytes: [UInt8]) -> Event {
        bytes.withUnsafeBufferPointer { parse($0) }
    }

    // MARK: - Head

    private mutating func fail(_ error: HTTPParseError) -> Event {
        phase = .failed
        failure = error
        return .failure(error)
    }

    /// Scans for the end of the head; nil means more bytes are needed.
    private mutating func scanHead(_ buf: UnsafeBufferPointer<UInt8>) -> Event? {
        var i = position
        let count = buf.count
        while i < count {
            let c = buf[i]
            if c == .lf {
                guard i > lineStart, buf[i - 1] == .cr else { return .failure(.malformed("Bare LF in the request head.")) }
                let lineLength = i - 1 - lineStart
                if lineLength == 0 {
                    if requestLineEnd == nil {
                        // RFC 9112 §2.2: ignore at least one empty line before the request line.
                        guard lineStart == 0 else {
                            return .failure(.malformed("More than one empty line before the request line."))
                        }
                        start = i + 1
                        lineStart = i + 1
                    } else {
                        position = i + 1
                        return headComplete(buf, end: i + 1)
                    }
                } else {
                    if requestLineEnd == nil {
                        if lineLength > limits.maxRequestLineBytes { return .failure(.requestLineTooLong) }
                        requestLineEnd = i + 1
                    } else if i + 1 - requestLineEnd! > limits.maxHeaderBytes {
                        return .failure(.headerTooLarge)
                    }
                    lineStart = i + 1
                }
            } else if c == .cr {
                guard i + 1 < count else { break }  // look again when the next byte arrives
                guard buf[i + 1] == .lf else { return .failure(.malformed("Bare CR in the request head.")) }
            }
            i += 1
        }
        position = i
        if let requestLineEnd {
            if i - requestLineEnd > limits.maxHeaderBytes { return .failure(.headerTooLarge) }
        } else if i - start > limits.maxRequestLineBytes + 1 {
            return .failure(.requestLineTooLong)
        }
        return nil
    }

    private mutating func headComplete(_ buf: UnsafeBufferPointer<UInt8>, end: Int) -> Event {
        let parsed: Head
        switch parseHead(buf, end: end) {
        case .success(let h): parsed = h
        case .failure(let e): return fail(e)
        }
        let framing: Framing
        switch Self.framing(of: parsed, limits: limits) {
        case .success(let f): framing = f
        case .failure(let e): return fail(e)
        }
        head = parsed
        cursor = end
        switch framing {
        case .none:
            return finish(body: [], consumed: end)
        case .length(let n):
            remaining = n
            phase = .lengthBody
        case .chunked:
            phase = .chunkSize
        }
        return parseBody(buf)
    }

    private enum Framing {
        case none
        case length(Int)
        case chunked
    }

    private func parseHead(_ buf: UnsafeBufferPointer<UInt8>, end: Int) -> Result<Head, HTTPParseError> {
        let lineEnd = requestLineEnd! - 2
        // Request line: method SP request-target SP HTTP-version (§3).
        guard let sp1 = firstIndex(of: .space, in: buf, from: start, to: lineEnd), sp1 > start else {
            return .failure(.malformed("The request line is not `method target version`."))
        }
        for k in start..<sp1 where !HTTPSyntax.isTChar(buf[k]) {
            return .failure(.malformed("The method is not a token."))
        }
        guard let sp2 = firstIndex(of: .space, in: buf, from: sp1 + 1, to: lineEnd), sp2 > sp1 + 1 else {
            return .failure(.malformed("The request line is not `method target version`."))
        }
        let method = HTTPMethod(rawValue: HTTPSyntax.string(buf, start..<sp1))
        guard HTTPMethod.implemented.contains(method) else { return .failure(.methodNotImplemented) }
        guard HTTPSyntax.isValidTarget(UnsafeBufferPointer(rebasing: buf[(sp1 + 1)..<sp2]), method: method) else {
            return .failure(.malformed("The request target is not origin-form, absolute-form or `*`."))
        }
        let version: HTTPVersion
        switch HTTPSyntax.parseVersion(UnsafeBufferPointer(rebasing: buf[(sp2 + 1)..<lineEnd])) {
        case .some(.http1_1): version = .http1_1
        case .some(.http1_0): version = .http1_0
        case .some: return .failure(.versionNotSupported)
        case .none: return .failure(.malformed("The HTTP version is malformed."))
        }
        let target = HTTPSyntax.string(buf, (sp1 + 1)..<sp2)

        var headers = HTTPHeaders()
        var lineStart = requestLineEnd!
        let headersEnd = end - 2
        while lineStart < headersEnd {
            let lf = firstIndex(of: .lf, in: buf, from: lineStart, to: headersEnd)!
            switch HTTPSyntax.parseField(buf, lineStart..<(lf - 1)) {
            case .success(let field):
                if HTTPHeaders.namesEqual(field.name, "Content-Length")
                    || HTTPHeaders.namesEqual(field.name, "Transfer-Encoding")
                    || HTTPHeaders.namesEqual(field.name, "Connection"),
                    firstIndex(of: .tab, in: buf, from: lineStart, to: lf) != nil
                {
                    return .failure(.badFraming("A tab in Content-Length, Transfer-Encoding or Connection."))
                }
                headers.add(name: field.name, value: field.value)
            case .failure(let e): return .failure(e)
            }
            if headers.count > limits.maxHeaderCount { return .failure(.tooManyHeaders) }
            lineStart = lf + 1
        }

        let hosts = headers[all: "Host"].count
        if version == .http1_1 && hosts != 1 || hosts > 1 {
            return .failure(.malformed(hosts == 0 ? "HTTP/1.1 requires a Host header." : "More than one Host header."))
        }
        var expectContinue = false
        let expectations = headers[all: "Expect"]
        if !expectations.isEmpty {
            guard expectations.count == 1,
                HTTPHeaders.namesEqual(expectations[0].trimmingASCIIWhitespace(), "100-continue")
            else { return .failure(.expectationFailed) }
            expectContinue = version == .http1_1
        }
        return .success(
            Head(
                method: method, target: target, version: version, headers: headers, end: end,
                expectContinue: expectContinue))
    }

    /// Body framing per RFC 9112 §6.3, strict.
    private static func framing(of head: Head, limits: HTTPParserLimits) -> Result<Framing, HTTPParseError> {
        let te = head.headers[all: "Transfer-Encoding"]
        let cl = head.headers[all: "Content-Length"]
        if !te.isEmpty {
            if !cl.isEmpty { return .failure(.badFraming("Both Content-Length and Transfer-Encoding.")) }
            if head.version == .http1_0 { return .failure(.badFraming("Transfer-Encoding in HTTP/1.0.")) }
            guard te.count == 1, HTTPHeaders.namesEqual(te[0].trimmingASCIIWhitespace(), "chunked") else {
                return .failure(.badFraming("Transfer-Encoding other than `chunked`."))
            }
            return .success(.chunked)
        }
        guard !cl.isEmpty else { return .success(.none) }
        guard cl.count == 1 else { return .failure(.badFraming("More than one Content-Length.")) }
        let value = cl[0].utf8
        guard !value.isEmpty, value.count <= 18, value.allSatisfy({ $0 >= .zero && $0 <= .nine }) else {
            return .failure(.badFraming("Content-Length is not a decimal number."))
        }
        let n = value.reduce(0) { $0 * 10 + Int($1 - .zero) }
        if n > limits.maxBodyBytes { return .failure(.bodyTooLarge) }
        return .success(n == 0 ? .none : .length(n))
    }

    // MARK: - Body

    private mutating func parseBody(_ buf: UnsafeBufferPointer<UInt8>) -> Event {
        let count = buf.count
        while true {
            switch phase {
            case .lengthBody:
                let end = cursor + remaining
                guard count >= end else { return awaitBody() }
                return finish(body: Array(UnsafeBufferPointer(rebasing: buf[cursor..<end])), consumed: end)
            case .chunkSize:
                guard let lf = firstIndex(of: .lf, in: buf, from: cursor, to: count) else {
                    if count - cursor > HTTPSyntax.maxChunkLineBytes {
                        return fail(.badFraming("A chunk-size line is too long."))
                    }
                    return awaitBody()
                }
                guard lf > cursor, buf[lf - 1] == .cr else { return fail(.badFraming("Bare LF in chunked framing.")) }
                let size: Int
                switch HTTPSyntax.parseChunkSize(buf, cursor..<(lf - 1), limit: limits.maxBodyBytes - decoded.count) {
                case .success(let s): size = s
                case .failure(let e): return fail(e)
                }
                cursor = lf + 1
                if size == 0 {
                    phase = .trailers
                } else {
                    remaining = size
                    decoded.reserveCapacity(decoded.count + size)
                    phase = .chunkData
                }
            case .chunkData:
                let take = min(remaining, count - cursor)
                decoded.append(contentsOf: UnsafeBufferPointer(rebasing: buf[cursor..<(cursor + take)]))
                cursor += take
                remaining -= take
                guard remaining == 0 else { return awaitBody() }
                phase = .chunkDataEnd
            case .chunkDataEnd:
                guard count - cursor >= 2 else { return awaitBody() }
                guard buf[cursor] == .cr, buf[cursor + 1] == .lf else {
                    return fail(.badFraming("Chunk data is not followed by CRLF."))
                }
                cursor += 2
                phase = .chunkSize
            case .trailers:
                guard let lf = firstIndex(of: .lf, in: buf, from: cursor, to: count) else {
                    if count - cursor > limits.maxHeaderBytes { return fail(.headerTooLarge) }
                    return awaitBody()
                }
                guard lf > cursor, buf[lf - 1] == .cr else { return fail(.badFraming("Bare LF in the trailer section.")) }
                if lf - 1 == cursor {
                    let body = decoded
                    decoded = []
                    return finish(body: body, consumed: lf + 1)
                }
                switch HTTPSyntax.parseField(buf, cursor..<(lf - 1)) {
                case .success(let field):
                    if Self.headerOnlyFields.contains(where: { HTTPHeaders.namesEqual($0, field.name) }) {
                        return fail(.badFraming("A field that controls framing, routing or the connection is in the trailers."))
                    }
                    trailers.add(name: field.name, value: field.value)
                case .failure(let e):
                    return fail(e)
                }
                if head!.headers.count + trailers.count > limits.maxHeaderCount { return fail(.tooManyHeaders) }
                cursor = lf + 1
            case .head, .failed:
                preconditionFailure("parseBody in phase \(phase)")
            }
            // Chunk framing may add overhead to the body, but not without bound.
            if cursor - head!.end > 2 * limits.maxBodyBytes + 64 * 1024 { return fail(.bodyTooLarge) }
        }
    }

    /// Fields that must be known before the body (RFC 9110 §6.5.1) and so are refused as trailers.
    static let headerOnlyFields = [
        "Content-Length", "Transfer-Encoding", "Connection", "Keep-Alive", "Proxy-Connection", "Upgrade", "TE",
        "Trailer", "Host", "Expect",
    ]

    private mutating func awaitBody() -> Event {
        if head!.expectContinue && !continueSent {
            continueSent = true
            return .sendContinue
        }
        return .needMore
    }

    private mutating func finish(body: [UInt8], consumed: Int) -> Event {
        let h = head!
        let request = HTTPRequest(
            method: h.method, target: h.target, version: h.version, headers: h.headers, body: body,
            trailers: trailers)
        self = HTTPRequestParser(limits: limits)
        return .request(request, consumed: consumed)
    }

    @inline(__always)
    private func firstIndex(of byte: UInt8, in buf: UnsafeBufferPointer<UInt8>, from: Int, to: Int) -> Int? {
        var i = from
        while i < to {
            if buf[i] == byte { return i }
            i += 1
        }
        return nil
    }
}
