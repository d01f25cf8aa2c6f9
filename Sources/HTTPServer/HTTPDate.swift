import Glibc

/// IMF-fixdate for the `Date` header (RFC 9110 §5.6.7), recomputed at most once a second per loop.
struct HTTPDateCache {
    private var second: Int = -1
    private var cached = ""

    mutating func current() -> String {
        var now = time(nil)
        guard now != second else { return cached }
        second = now
        var tm = Glibc.tm()
        gmtime_r(&now, &tm)
        var buffer = [CChar](repeating: 0, count: 64)
        let n = strftime(&buffer, buffer.count, "%a, %d %b %Y %H:%M:%S GMT", &tm)
        cached = String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return cached
    }
}
