import CZlib
import Foundation

/// Text kept compressed in a text column: zlib (RFC 1950) in base64, behind a `z` and the
/// uncompressed length. A chart rollup's rows per holder shrink about tenfold.
package enum Deflated {
    package static func pack(_ text: String) -> String { pack(bytes: Array(text.utf8)) }

    /// ``pack(_:)`` of the text whose UTF-8 bytes are `input`.
    package static func pack(bytes input: [UInt8]) -> String {
        var size = compressBound(uLong(input.count))
        var output = [UInt8](repeating: 0, count: Int(size))
        let rc = output.withUnsafeMutableBufferPointer { out in
            input.withUnsafeBufferPointer { compress2(out.baseAddress, &size, $0.baseAddress, uLong(input.count), 1) }
        }
        precondition(rc == Z_OK, "zlib compress2 failed with the bound it computed")
        return "z\(input.count):" + Data(output[0..<Int(size)]).base64EncodedString()
    }

    /// ``pack(_:)``'s text back; nil when it is not such text.
    package static func unpack(_ packed: String) -> String? {
        guard packed.hasPrefix("z"), let colon = packed.firstIndex(of: ":"),
            let length = Int(packed[packed.index(after: packed.startIndex)..<colon]), length >= 0, length < 1 << 30,
            let data = Data(base64Encoded: String(packed[packed.index(after: colon)...]))
        else { return nil }
        let input = [UInt8](data)
        var output = [UInt8](repeating: 0, count: max(length, 1))
        var size = uLong(length)
        let rc = output.withUnsafeMutableBufferPointer { out in
            input.withUnsafeBufferPointer { uncompress(out.baseAddress, &size, $0.baseAddress, uLong(input.count)) }
        }
        guard rc == Z_OK, size == uLong(length) else { return nil }
        return String(decoding: output[0..<length], as: UTF8.self)
    }
}
