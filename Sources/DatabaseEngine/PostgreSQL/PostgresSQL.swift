/// SQL as the stores write it (SQLite's `?` and `?NNN` parameters) rewritten for PostgreSQL
/// (`$NNN`). Pure: no connection, tested byte by byte.
package enum PostgresSQL {
    /// `sql` with each parameter numbered as SQLite numbers it: `?NNN` is parameter NNN, a bare
    /// `?` is one more than the largest number so far (sqlite.org/lang_expr.html#varparam).
    /// Question marks inside string literals, quoted identifiers and comments are left alone.
    /// `parameters` is the largest number used.
    package static func translate(_ sql: String) -> (sql: String, parameters: Int) {
        let bytes = Array(sql.utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count + 8)
        var largest = 0
        var i = 0
        func isDigit(_ b: UInt8) -> Bool { b >= UInt8(ascii: "0") && b <= UInt8(ascii: "9") }
        while i < bytes.count {
            let b = bytes[i]
            switch b {
            case UInt8(ascii: "'"), UInt8(ascii: "\""):
                // A literal or quoted identifier; a doubled quote inside it is the quote itself.
                var j = i + 1
                while j < bytes.count {
                    if bytes[j] == b {
                        if j + 1 < bytes.count && bytes[j + 1] == b {
                            j += 2
                            continue
                        }
                        break
                    }
                    j += 1
                }
                let end = min(j + 1, bytes.count)
                out += bytes[i..<end]
                i = end
            case UInt8(ascii: "-") where i + 1 < bytes.count && bytes[i + 1] == UInt8(ascii: "-"):
                var j = i
                while j < bytes.count && bytes[j] != UInt8(ascii: "\n") { j += 1 }
                out += bytes[i..<j]
                i = j
            case UInt8(ascii: "/") where i + 1 < bytes.count && bytes[i + 1] == UInt8(ascii: "*"):
                var j = i + 2
                while j + 1 < bytes.count && !(bytes[j] == UInt8(ascii: "*") && bytes[j + 1] == UInt8(ascii: "/")) { j += 1 }
                let end = min(j + 2, bytes.count)
                out += bytes[i..<end]
                i = end
            case UInt8(ascii: "?"):
                var j = i + 1
                var number = 0
                while j < bytes.count && isDigit(bytes[j]) && number < 1_000_000 {
                    number = number * 10 + Int(bytes[j] - UInt8(ascii: "0"))
                    j += 1
                }
                if j == i + 1 { number = largest + 1 }
                largest = max(largest, number)
                out += Array("$\(number)".utf8)
                i = j
            default:
                out.append(b)
                i += 1
            }
        }
        return (String(decoding: out, as: UTF8.self), largest)
    }

    /// `texts` as a PostgreSQL array literal (`text[]`'s input form), each element quoted with its
    /// `"` and `\` escaped, so that every byte comes back as it was: `{"a","b\"c"}`; `{}` for none
    /// (postgresql.org/docs/15/arrays.html#ARRAYS-IO).
    package static func arrayLiteral(_ texts: [String]) -> String {
        var out: [UInt8] = [UInt8(ascii: "{")]
        for (i, text) in texts.enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            out.append(UInt8(ascii: "\""))
            for byte in text.utf8 {
                if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") { out.append(UInt8(ascii: "\\")) }
                out.append(byte)
            }
            out.append(UInt8(ascii: "\""))
        }
        out.append(UInt8(ascii: "}"))
        return String(decoding: out, as: UTF8.self)
    }
}
