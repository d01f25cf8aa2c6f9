// A statement's parameters as libpq takes them.

/// Calls `body` with `strings` as C strings (nil stays a null pointer: SQL NULL): each one's
/// UTF-8 and its NUL in one buffer, pointed into. A copy per parameter (`strdup` of a String,
/// itself made a C string on the heap first) was two allocations a parameter.
func withCStrings<R>(_ strings: [String?], _ body: ([UnsafePointer<CChar>?]) -> R) -> R {
    var bytes: [UInt8] = []
    bytes.reserveCapacity(strings.reduce(1) { $0 + ($1?.utf8.count ?? 0) + 1 })
    var starts: [Int?] = []
    starts.reserveCapacity(strings.count)
    for string in strings {
        guard let string else {
            starts.append(nil)
            continue
        }
        starts.append(bytes.count)
        bytes.append(contentsOf: string.utf8)
        bytes.append(0)
    }
    bytes.append(0)  // never empty, so it has an address
    return bytes.withUnsafeBufferPointer { buffer in
        buffer.withMemoryRebound(to: CChar.self) { text in
            body(starts.map { $0.map { UnsafePointer(text.baseAddress! + $0) } })
        }
    }
}
