/// Compares receiptd's parser with llhttp on one input.
///
/// The two must agree on every complete request (method, target, version, header and trailer
/// fields, body, where it ends, keep-alive) and on whether the bytes after the last one are a
/// request in progress or an error. The one allowed difference: receiptd rejects a request that
/// llhttp accepts, when the request falls in one of the documented `StricterCase`s; each case is
/// checked here on the bytes and on llhttp's reading of them, independently of receiptd's parser.
public enum Differential {
    public struct Disagreement: Error, CustomStringConvertible {
        public let reason: String
        public let ours: ParseTrace
        public let reference: ParseTrace
        public var description: String { "\(reason)\nreceiptd:\n\(ours)\nllhttp:\n\(reference)" }
    }

    public static func check(_ input: [UInt8]) -> Disagreement? {
        let ours = OurParser.trace(input)
        let reference = ReferenceParser.trace(input)
        func disagree(_ reason: String) -> Disagreement {
            Disagreement(reason: reason, ours: ours, reference: reference)
        }

        let common = min(ours.messages.count, reference.messages.count)
        for i in 0..<common where !sameRequest(ours.messages[i], reference.messages[i]) {
            return disagree("request \(i) differs")
        }
        // After a request that ends the connection (or upgrades it), later bytes are not requests.
        if ours.outcome == .stopped && ours.messages.count == common { return nil }
        if reference.outcome == .stopped && reference.messages.count == common { return nil }

        let start = common == 0 ? 0 : ours.messages[common - 1].end
        let rest = Array(input[start...])
        if ours.messages.count > common {
            return disagree("receiptd completes request \(common), llhttp does not (\(reference.outcome))")
        }
        if reference.messages.count > common {
            // llhttp completes a request receiptd does not: allowed only where receiptd is stricter.
            let message = reference.messages[common]
            let raw = Array(input[start..<message.end])
            if ours.outcome == .needMore {
                // receiptd checks a line when it ends: end it, and receiptd must reject it.
                let ended = OurParser.trace(Array(input[start...]) + Array("\r\n\r\n".utf8))
                guard ended.messages.isEmpty, !StricterCase.matching(raw: raw, message: message).isEmpty else {
                    return disagree("llhttp completes request \(common), receiptd needs more bytes")
                }
                return nil
            }
            if StricterCase.matching(raw: raw, message: message).isEmpty {
                return disagree("receiptd rejects request \(common), which llhttp accepts, for no documented reason")
            }
            return nil
        }
        switch (ours.outcome, reference.outcome) {
        case (.needMore, .needMore), (.error, .error):
            return nil
        case (.error, _):
            // receiptd rejects bytes llhttp still reads as a request in progress.
            if StricterCase.matching(raw: rest, message: reference.pendingHead).isEmpty {
                return disagree("receiptd rejects a partial request llhttp still reads, for no documented reason")
            }
            return nil
        case (.needMore, _):
            // llhttp rejects bytes receiptd still reads. receiptd checks a line when it ends, llhttp
            // byte by byte, so end the head and see whether receiptd then rejects it too.
            let ended = OurParser.trace(rest + Array("\r\n\r\n".utf8))
            if ended.messages.isEmpty { return nil }
            return disagree("llhttp rejects request \(common), receiptd accepts it once the head ends")
        case (.stopped, _):
            return nil  // handled above
        }
    }
}

extension Differential {
    /// Equal, except that receiptd may close where llhttp keeps alive when `Connection` lists
    /// `close` (llhttp lets `keep-alive` win for HTTP/1.0 when both are listed; receiptd lets
    /// `close` win, the safe reading).
    static func sameRequest(_ ours: ParseTrace.Message, _ reference: ParseTrace.Message) -> Bool {
        if ours == reference { return true }
        guard !ours.keepAlive, reference.keepAlive else { return false }
        var adjusted = reference
        adjusted.keepAlive = false
        // Split as bytes, as both parsers do: a comma followed by a combining mark is still a comma.
        let listsClose = reference.headers.contains { field in
            field.name.lowercased() == "connection"
                && field.value.utf8.map { $0 >= 0x41 && $0 <= 0x5A ? $0 | 0x20 : $0 }.split(separator: UInt8(ascii: ",")).contains
                {
                    $0.drop { $0 == 0x20 || $0 == 0x09 }.reversed().drop { $0 == 0x20 || $0 == 0x09 }
                        .elementsEqual("close".utf8.reversed())
                }
        }
        return listsClose && ours == adjusted
    }
}

/// The documented cases in which receiptd rejects a request llhttp 8.1 (strict) accepts. Docs/security.md's
/// "HTTP framing policy" lists the same cases.
public enum StricterCase: String, CaseIterable, Sendable {
    /// More than one empty line before the request line (RFC 9112 §2.2 asks to ignore one).
    case leadingEmptyLines
    /// A bare LF or bare CR as a line ending in the head or the chunked framing.
    case bareLineEnding
    /// A field line that starts with whitespace: obs-fold, or whitespace before the first field.
    case obsFold
    /// Whitespace between a field name and its colon (RFC 9112 §5.1 requires a 400).
    case whitespaceBeforeColon
    /// A field line with an empty name (`: value`).
    case emptyFieldName
    /// A request line that is not `method SP target SP version` with single spaces.
    case requestLineSpacing
    /// A tab in a Content-Length, Transfer-Encoding or Connection field line (llhttp refuses some
    /// of these, and does not read `keep-alive` followed by a tab as the token).
    case tabInFramingField
    /// A method other than GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS (501). Read from the raw
    /// request line when llhttp has no head yet: for `PRI` llhttp expects the HTTP/2 preface
    /// (`SM` after the empty line) and waits, where receiptd answers 501 when the line ends.
    case methodNotImplemented
    /// A request-target that is not origin-form, absolute-form or `*` for OPTIONS, or has a byte
    /// RFC 3986 does not allow there.
    case requestTarget
    /// A version other than HTTP/1.0 and HTTP/1.1 (505).
    case httpVersion
    /// HTTP/1.1 without exactly one Host, or HTTP/1.0 with more than one.
    case host
    /// A Transfer-Encoding other than exactly one `chunked`, or any in HTTP/1.0.
    case transferEncoding
    /// An Expect other than one `100-continue` (417).
    case expectation
    /// A field that controls framing, routing or the connection among the trailer fields:
    /// Content-Length, Transfer-Encoding, Connection, Keep-Alive, Proxy-Connection, Upgrade, TE,
    /// Trailer, Host, Expect.
    case controlFieldInTrailers
    /// A control byte (other than HTAB) or DEL in a field value.
    case fieldValueControl
    /// A chunk line with anything but hex digits: whitespace, or an extension (receiptd refuses
    /// every chunk extension).
    case chunkLine
    /// A Content-Length or chunk size over `maxBodyBytes` (413); found loosely, as a long number.
    case bodyTooLarge

    /// The cases that hold for a request: `raw` is its bytes (from its start), `message` llhttp's
    /// reading of it when llhttp completed it.
    public static func matching(raw: [UInt8], message: ParseTrace.Message?) -> [StricterCase] {
        allCases.filter { $0.holds(raw: raw, message: message) }
    }

    func holds(raw: [UInt8], message m: ParseTrace.Message?) -> Bool {
        switch self {
        case .leadingEmptyLines:
            return RawHead.leadingEmptyLines(raw) > 1
        case .bareLineEnding:
            return RawHead.hasBareLineEnding(raw[..<RawHead.end(raw)])
                || ChunkGrammar.trailerSection(raw[RawHead.end(raw)...]).map(RawHead.hasBareLineEnding) == true
        case .obsFold:
            return RawHead.hasLineStartingWithWhitespace(raw[..<RawHead.end(raw)])
                || ChunkGrammar.trailerLines(raw[RawHead.end(raw)...]).contains { $0.first == 0x20 || $0.first == 0x09 }
        case .whitespaceBeforeColon:
            return (RawHead.fieldLines(raw) + ChunkGrammar.trailerLines(raw[RawHead.end(raw)...])).contains { line in
                guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { return false }
                return line[..<colon].contains { $0 == 0x20 || $0 == 0x09 }
            }
        case .emptyFieldName:
            return (RawHead.fieldLines(raw) + ChunkGrammar.trailerLines(raw[RawHead.end(raw)...]))
                .contains { $0.first == UInt8(ascii: ":") }
        case .requestLineSpacing:
            let head = raw[RawHead.leadingEmptyBytes(raw)...]
            let line = head[..<(head.firstIndex(of: 0x0A) ?? head.endIndex)]
            let spaces = line.count { $0 == 0x20 }
            return spaces != 2 || line.contains(0x09) || line.first == 0x20
                || line.contains([0x20, 0x20]) || (line.last == 0x20 || line.dropLast().last == 0x20 && line.last == 0x0D)
        case .tabInFramingField:
            return RawHead.fieldLines(raw).contains { line in
                let name = String(decoding: line.prefix { $0 != UInt8(ascii: ":") }, as: UTF8.self).lowercased()
                return ["content-length", "transfer-encoding", "connection"].contains(name) && line.contains(0x09)
            }
        case .methodNotImplemented:
            guard let method = m?.method ?? RawHead.method(raw) else { return false }
            return !["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"].contains(method)
        case .requestTarget:
            guard let m else { return false }
            return !TargetGrammar.isValid(m.target, method: m.method)
        case .httpVersion:
            guard let m else { return false }
            return m.version.major != 1 || m.version.minor > 1
        case .host:
            guard let m else { return false }
            let hosts = m.headers.count { $0.name.lowercased() == "host" }
            return m.version.minor == 1 ? hosts != 1 : hosts > 1
        case .transferEncoding:
            guard let m else { return false }
            let te = m.headers.filter { $0.name.lowercased() == "transfer-encoding" }
            if te.isEmpty { return false }
            return te.count != 1 || te[0].value.lowercased() != "chunked" || m.version.minor == 0
        case .expectation:
            guard let m else { return false }
            let expect = m.headers.filter { $0.name.lowercased() == "expect" }
            if expect.isEmpty { return false }
            return expect.count != 1 || expect[0].value.lowercased() != "100-continue"
        case .controlFieldInTrailers:
            guard let m else { return false }
            let refused = [
                "content-length", "transfer-encoding", "connection", "keep-alive", "proxy-connection", "upgrade", "te",
                "trailer", "host", "expect",
            ]
            return m.trailers.contains { refused.contains($0.name.lowercased()) }
        case .fieldValueControl:
            guard let m else { return false }
            return (m.headers + m.trailers).contains { $0.value.utf8.contains { ($0 < 0x20 && $0 != 0x09) || $0 == 0x7F } }
        case .bodyTooLarge:
            var run = 0
            for c in raw {
                let hex = (c >= 0x30 && c <= 0x39) || ((c | 0x20) >= 0x61 && (c | 0x20) <= 0x66)
                run = hex ? run + 1 : 0
                if run >= 7 { return true }
            }
            return false
        case .chunkLine:
            guard let m, m.headers.contains(where: { $0.name.lowercased() == "transfer-encoding" }) else { return false }
            return !ChunkGrammar.isStrict(raw[RawHead.end(raw)...])
        }
    }
}

/// The head of a request in raw bytes, read leniently (any line ending) so that strict checks can
/// be made on it.
enum RawHead {
    /// How many empty lines precede the request line.
    static func leadingEmptyLines(_ raw: [UInt8]) -> Int {
        var i = 0
        var lines = 0
        while i < raw.count {
            if raw[i] == 0x0A {
                lines += 1
                i += 1
            } else if raw[i] == 0x0D && i + 1 < raw.count && raw[i + 1] == 0x0A {
                lines += 1
                i += 2
            } else {
                break
            }
        }
        return lines
    }

    /// The offset just past the head's final empty line (or the end of `raw`).
    static func end(_ raw: [UInt8]) -> Int {
        var i = 0
        while i < raw.count && (raw[i] == 0x0A || raw[i] == 0x0D) { i += 1 }
        var lineStart = i
        while i < raw.count {
            if raw[i] == 0x0A {
                let content = raw[lineStart..<i]
                if content.isEmpty || content == [0x0D] { return i + 1 }
                lineStart = i + 1
            }
            i += 1
        }
        return raw.count
    }

    /// The head's lines after the request line, split at LF, CR removed from their ends.
    static func fieldLines(_ raw: [UInt8]) -> [ArraySlice<UInt8>] {
        let head = raw[RawHead.leadingEmptyBytes(raw)..<RawHead.end(raw)]
        var lines = head.split(separator: 0x0A, omittingEmptySubsequences: false).map { line in
            line.last == 0x0D ? line.dropLast() : line
        }
        if !lines.isEmpty { lines.removeFirst() }
        return lines
    }

    /// The request line's method: its bytes up to the first space, once that space has arrived.
    static func method(_ raw: [UInt8]) -> String? {
        let line = raw[leadingEmptyBytes(raw)...]
        guard let space = line.firstIndex(of: 0x20), space > line.startIndex else { return nil }
        return String(decoding: line[..<space], as: UTF8.self)
    }

    static func leadingEmptyBytes(_ raw: [UInt8]) -> Int {
        var i = 0
        while i < raw.count && (raw[i] == 0x0A || raw[i] == 0x0D) { i += 1 }
        return i
    }

    static func hasLineStartingWithWhitespace(_ head: ArraySlice<UInt8>) -> Bool {
        var i = head.startIndex
        while i + 1 < head.endIndex {
            if head[i] == 0x0A && (head[i + 1] == 0x20 || head[i + 1] == 0x09) { return true }
            i += 1
        }
        return false
    }

    static func hasBareLineEnding(_ head: ArraySlice<UInt8>) -> Bool {
        var i = head.startIndex
        while i < head.endIndex {
            if head[i] == 0x0A && (i == head.startIndex || head[i - 1] != 0x0D) { return true }
            if head[i] == 0x0D && i + 1 < head.endIndex && head[i + 1] != 0x0A { return true }
            i += 1
        }
        return false
    }
}

/// RFC 9112 §3.2 request-target forms with RFC 3986 characters, as receiptd documents them (an
/// independent statement of the rule, written apart from receiptd's parser): origin-form,
/// absolute-form for http/https without userinfo, `*` for OPTIONS.
enum TargetGrammar {
    static func isValid(_ target: String, method: String) -> Bool {
        let b = Array(target.utf8)
        if b == Array("*".utf8) { return method == "OPTIONS" }
        if b.first == UInt8(ascii: "/") { return isPathAndQuery(b[...]) }
        let lower = target.lowercased()
        let schemeLength = lower.hasPrefix("http://") ? 7 : lower.hasPrefix("https://") ? 8 : 0
        guard schemeLength > 0 else { return false }
        let afterScheme = b[schemeLength...]
        let authorityEnd = afterScheme.firstIndex { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") } ?? b.endIndex
        guard isAuthority(b[schemeLength..<authorityEnd]) else { return false }
        return isPathAndQuery(b[authorityEnd...])
    }

    /// host [ ":" port ], host a bracketed IP literal or a non-empty reg-name.
    private static func isAuthority(_ a: ArraySlice<UInt8>) -> Bool {
        var host = a
        if a.first == UInt8(ascii: "[") {
            guard let close = a.firstIndex(of: UInt8(ascii: "]")), close > a.startIndex + 1 else { return false }
            guard a[(a.startIndex + 1)..<close].allSatisfy({ isHex($0) || $0 == UInt8(ascii: ":") || $0 == UInt8(ascii: ".") })
            else { return false }
            let rest = a[(close + 1)...]
            return rest.isEmpty || (rest.first == UInt8(ascii: ":") && rest.dropFirst().allSatisfy(isDigit))
        }
        if let colon = a.firstIndex(of: UInt8(ascii: ":")) {
            guard a[(colon + 1)...].allSatisfy(isDigit) else { return false }
            host = a[..<colon]
        }
        guard !host.isEmpty else { return false }
        return escapesValid(host)
            && host.allSatisfy { isUnreserved($0) || isSubDelim($0) || $0 == UInt8(ascii: "%") || isHex($0) }
    }

    private static func isPathAndQuery(_ s: ArraySlice<UInt8>) -> Bool {
        escapesValid(s)
            && s.allSatisfy {
                isUnreserved($0) || isSubDelim($0) || ":@/?%".utf8.contains($0)
            }
    }

    private static func escapesValid(_ s: ArraySlice<UInt8>) -> Bool {
        var i = s.startIndex
        while i < s.endIndex {
            if s[i] == UInt8(ascii: "%") {
                guard i + 2 < s.endIndex, isHex(s[i + 1]), isHex(s[i + 2]) else { return false }
                i += 3
            } else {
                i += 1
            }
        }
        return true
    }

    private static func isUnreserved(_ c: UInt8) -> Bool { isAlpha(c) || isDigit(c) || "-._~".utf8.contains(c) }
    private static func isSubDelim(_ c: UInt8) -> Bool { "!$&'()*+,;=".utf8.contains(c) }
    private static func isAlpha(_ c: UInt8) -> Bool { (c | 0x20) >= 0x61 && (c | 0x20) <= 0x7A }
    private static func isDigit(_ c: UInt8) -> Bool { c >= 0x30 && c <= 0x39 }
    private static func isHex(_ c: UInt8) -> Bool { isDigit(c) || ((c | 0x20) >= 0x61 && (c | 0x20) <= 0x66) }
}

/// RFC 9112 §7.1 chunked framing as receiptd takes it: `HEX CRLF` size lines (no extensions)
/// lines, CRLF after each chunk's data, CRLF-ended trailer lines.
enum ChunkGrammar {
    static func isStrict(_ body: ArraySlice<UInt8>) -> Bool {
        var i = body.startIndex
        func line() -> ArraySlice<UInt8>? {
            guard let lf = body[i...].firstIndex(of: 0x0A) else { return nil }
            guard lf > i, body[lf - 1] == 0x0D else { return nil }
            let l = body[i..<(lf - 1)]
            i = lf + 1
            return l
        }
        while true {
            guard let sizeLine = line() else { return false }
            guard let size = chunkSize(sizeLine) else { return false }
            if size == 0 { break }
            guard body.endIndex - i >= size + 2 else { return false }
            i += size
            guard body[i] == 0x0D, body[i + 1] == 0x0A else { return false }
            i += 2
        }
        while true {
            guard let trailer = line() else { return false }
            if trailer.isEmpty { return true }
        }
    }

    /// The trailer field lines of a chunked body, read leniently (LF line ends, CR optional,
    /// anything after a chunk size's hex digits ignored); empty when the body is not chunked.
    static func trailerLines(_ body: ArraySlice<UInt8>) -> [ArraySlice<UInt8>] {
        guard let section = trailerSection(body) else { return [] }
        var i = section.startIndex
        var lines: [ArraySlice<UInt8>] = []
        while let lf = section[i...].firstIndex(of: 0x0A) {
            var l = section[i..<lf]
            if l.last == 0x0D { l = l.dropLast() }
            if l.isEmpty { break }
            lines.append(l)
            i = lf + 1
        }
        return lines
    }

    /// The bytes after a chunked body's last chunk (its trailer section and what follows), read
    /// as leniently as `trailerLines`; nil when the last chunk is not reached.
    static func trailerSection(_ body: ArraySlice<UInt8>) -> ArraySlice<UInt8>? {
        var i = body.startIndex
        func line() -> ArraySlice<UInt8>? {
            guard let lf = body[i...].firstIndex(of: 0x0A) else { return nil }
            var l = body[i..<lf]
            if l.last == 0x0D { l = l.dropLast() }
            i = lf + 1
            return l
        }
        while true {
            guard let sizeLine = line() else { return nil }
            var size = 0
            for c in sizeLine {
                guard let d = hex(c), size < (1 << 40) else { break }
                size = size << 4 | d
            }
            if size == 0 { return body[i...] }
            guard body.endIndex - i >= size else { return nil }
            i += size
            _ = line()
        }
    }

    private static func chunkSize(_ l: ArraySlice<UInt8>) -> Int? {
        var i = l.startIndex
        var size = 0
        while i < l.endIndex, let d = hex(l[i]) {
            guard size < (1 << 40) else { return nil }
            size = size << 4 | d
            i += 1
        }
        guard i > l.startIndex, i == l.endIndex else { return nil }  // no extensions, no whitespace
        return size
    }

    private static func hex(_ c: UInt8) -> Int? {
        switch c {
        case 0x30...0x39: Int(c - 0x30)
        case 0x41...0x46: Int(c - 0x41 + 10)
        case 0x61...0x66: Int(c - 0x61 + 10)
        default: nil
        }
    }
}
