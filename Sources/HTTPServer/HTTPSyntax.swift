/// Byte-level grammar pieces of RFC 9110/9112 shared by the parser's head and trailer sections.
enum HTTPSyntax {
    /// Longest chunk-size line (size plus extensions) accepted.
    static let maxChunkLineBytes = 4096

    /// tchar (RFC 9110 §5.6.2): `!#$%&'*+-.^_`|~`, digits and letters.
    static let tcharTable: [Bool] = {
        var t = [Bool](repeating: false, count: 256)
        for c in UInt8(ascii: "0")...UInt8(ascii: "9") { t[Int(c)] = true }
        for c in UInt8(ascii: "a")...UInt8(ascii: "z") { t[Int(c)] = true }
        for c in UInt8(ascii: "A")...UInt8(ascii: "Z") { t[Int(c)] = true }
        for c in "!#$%&'*+-.^_`|~".utf8 { t[Int(c)] = true }
        return t
    }()

    @inline(__always)
    static func isTChar(_ c: UInt8) -> Bool { tcharTable[Int(c)] }

    /// Field-value bytes (§5.5): visible ASCII, obs-text, SP and HTAB; no other control byte.
    @inline(__always)
    static func isFieldValueByte(_ c: UInt8) -> Bool { c >= 0x20 && c != 0x7F || c == .tab }

    static func string(_ buf: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) -> String {
        String(decoding: UnsafeBufferPointer(rebasing: buf[range]), as: UTF8.self)
    }

    /// `HTTP/` DIGIT `.` DIGIT, or nil when malformed.
    static func parseVersion(_ v: UnsafeBufferPointer<UInt8>) -> HTTPVersion? {
        guard v.count == 8, v[0] == UInt8(ascii: "H"), v[1] == UInt8(ascii: "T"), v[2] == UInt8(ascii: "T"),
            v[3] == UInt8(ascii: "P"), v[4] == UInt8(ascii: "/"), v[6] == UInt8(ascii: "."),
            (.zero ... .nine).contains(v[5]), (.zero ... .nine).contains(v[7])
        else { return nil }
        return HTTPVersion(major: Int(v[5] - .zero), minor: Int(v[7] - .zero))
    }

    /// One `field-name ":" OWS field-value OWS` line, without its CRLF (§5.1).
    static func parseField(_ buf: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) -> Result<HTTPHeaders.Field, HTTPParseError> {
        let first = buf[range.lowerBound]
        if first == .space || first == .tab {
            return .failure(.malformed("Obsolete line folding (obs-fold) is not accepted."))
        }
        var colon = range.lowerBound
        while colon < range.upperBound && buf[colon] != UInt8(ascii: ":") {
            guard isTChar(buf[colon]) else {
                if buf[colon] == .space || buf[colon] == .tab {
                    return .failure(.malformed("Whitespace between a field name and its colon."))
                }
                return .failure(.malformed("A field name is not a token."))
            }
            colon += 1
        }
        guard colon < range.upperBound, colon > range.lowerBound else {
            return .failure(.malformed("A header line has no field name or colon."))
        }
        var vs = colon + 1
        var ve = range.upperBound
        while vs < ve && (buf[vs] == .space || buf[vs] == .tab) { vs += 1 }
        while ve > vs && (buf[ve - 1] == .space || buf[ve - 1] == .tab) { ve -= 1 }
        for k in vs..<ve where !isFieldValueByte(buf[k]) {
            return .failure(.malformed("A field value has a control byte."))
        }
        return .success(HTTPHeaders.Field(name: string(buf, range.lowerBound..<colon), value: string(buf, vs..<ve)))
    }

    /// pchar bytes of RFC 3986 besides `%XX` escapes: unreserved, sub-delims, ":", "@".
    static let pcharTable: [Bool] = {
        var t = [Bool](repeating: false, count: 256)
        for c in UInt8(ascii: "0")...UInt8(ascii: "9") { t[Int(c)] = true }
        for c in UInt8(ascii: "a")...UInt8(ascii: "z") { t[Int(c)] = true }
        for c in UInt8(ascii: "A")...UInt8(ascii: "Z") { t[Int(c)] = true }
        for c in "-._~!$&'()*+,;=:@".utf8 { t[Int(c)] = true }
        return t
    }()

    /// RFC 9112 §3.2: origin-form (`/path[?query]`), absolute-form for http and https
    /// (`http://host[:port][/path][?query]`, no userinfo), or `*` for OPTIONS. RFC 3986 bytes
    /// only, `%` only as `%XX`, no fragment. authority-form is CONNECT's, which is not served.
    static func isValidTarget(_ t: UnsafeBufferPointer<UInt8>, method: HTTPMethod) -> Bool {
        guard let first = t.first else { return false }
        if t.count == 1 && first == UInt8(ascii: "*") { return method == .options }
        var i = 0
        if first != UInt8(ascii: "/") {
            guard let afterAuthority = absoluteFormAuthorityEnd(t) else { return false }
            i = afterAuthority
        }
        // path-abempty [ "?" query ]: pchar, "/", and "?" (the first one starts the query).
        while i < t.count {
            let c = t[i]
            if c == UInt8(ascii: "%") {
                guard i + 2 < t.count, PercentDecoding.hexValue(t[i + 1]) != nil, PercentDecoding.hexValue(t[i + 2]) != nil
                else { return false }
                i += 3
                continue
            }
            guard pcharTable[Int(c)] || c == UInt8(ascii: "/") || c == UInt8(ascii: "?") else { return false }
            i += 1
        }
        return true
    }

    /// For `http://` or `https://` (any case) and a valid `host[:port]`: the offset after it.
    private static func absoluteFormAuthorityEnd(_ t: UnsafeBufferPointer<UInt8>) -> Int? {
        func lower(_ k: Int) -> UInt8 { t[k] | 0x20 }
        var i: Int
        if t.count >= 7, lower(0) == UInt8(ascii: "h"), lower(1) == UInt8(ascii: "t"), lower(2) == UInt8(ascii: "t"),
            lower(3) == UInt8(ascii: "p")
        {
            i = 4
            if t[i] | 0x20 == UInt8(ascii: "s") { i += 1 }
        } else {
            return nil
        }
        guard t.count - i >= 3, t[i] == UInt8(ascii: ":"), t[i + 1] == UInt8(ascii: "/"), t[i + 2] == UInt8(ascii: "/")
        else { return nil }
        i += 3
        // host: reg-name (unreserved / sub-delims / %XX) or an IP-literal in brackets.
        let hostStart = i
        if i < t.count && t[i] == UInt8(ascii: "[") {
            i += 1
            let literalStart = i
            while i < t.count, PercentDecoding.hexValue(t[i]) != nil || t[i] == UInt8(ascii: ":") || t[i] == UInt8(ascii: ".") {
                i += 1
            }
            guard i > literalStart, i < t.count, t[i] == UInt8(ascii: "]") else { return nil }
            i += 1
        } else {
            while i < t.count, t[i] != UInt8(ascii: ":"), t[i] != UInt8(ascii: "/"), t[i] != UInt8(ascii: "?") {
                let c = t[i]
                if c == UInt8(ascii: "%") {
                    guard i + 2 < t.count, PercentDecoding.hexValue(t[i + 1]) != nil, PercentDecoding.hexValue(t[i + 2]) != nil
                    else { return nil }
                    i += 3
                    continue
                }
                guard pcharTable[Int(c)], c != UInt8(ascii: "@") else { return nil }
                i += 1
            }
        }
        guard i > hostStart else { return nil }
        if i < t.count && t[i] == UInt8(ascii: ":") {
            i += 1
            while i < t.count, (.zero ... .nine).contains(t[i]) { i += 1 }
        }
        guard i == t.count || t[i] == UInt8(ascii: "/") || t[i] == UInt8(ascii: "?") else { return nil }
        return i
    }

    /// `chunk-size` (§7.1): bare hex digits and nothing else (no extensions).
    static func parseChunkSize(_ buf: UnsafeBufferPointer<UInt8>, _ range: Range<Int>, limit: Int) -> Result<Int, HTTPParseError>
    {
        var size = 0
        var i = range.lowerBound
        while i < range.upperBound, let digit = PercentDecoding.hexValue(buf[i]) {
            if size > (Int.max >> 4) { return .failure(.bodyTooLarge) }
            size = size << 4 | Int(digit)
            i += 1
        }
        guard i > range.lowerBound else { return .failure(.badFraming("A chunk size is not hexadecimal.")) }
        if i < range.upperBound {
            // Chunk extensions (§7.1.1) are refused: receiptd has no use for them, and independent
            // parsers disagree on their syntax (llhttp 8.1 refuses `;a=b;c`, which the grammar
            // allows), a disagreement a proxy in front could be led into.
            if buf[i] == UInt8(ascii: ";") { return .failure(.badFraming("Chunk extensions are not accepted.")) }
            return .failure(.badFraming("A chunk size has trailing bytes."))
        }
        if size > limit { return .failure(.bodyTooLarge) }
        return .success(size)
    }
}

extension UInt8 {
    static let cr = UInt8(ascii: "\r")
    static let lf = UInt8(ascii: "\n")
    static let space = UInt8(ascii: " ")
    static let tab = UInt8(ascii: "\t")
    static let zero = UInt8(ascii: "0")
    static let nine = UInt8(ascii: "9")
}
