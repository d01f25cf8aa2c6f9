import CZlib
import Foundation

/// Text kept compressed in a text column: zlib (RFC 1950) in base64, behind a `z` and the
/// uncompressed length. A chart rollup's rows per holder shrink about tenfold.
package enum Deflated {
    package static func pack(_ text: String) -> String { pack(bytes: Array(text.utf8)) }

    /// ``pack(_:)`` of the text whose UTF-8 bytes are `input`, or of any bytes. zlib's fastest
    /// level with a window of 4 KiB and a small hash table (what is packed is a few KiB at most):
    /// `compress2`'s defaults (32 KiB, the largest table) allocate and clear a quarter of a
    /// megabyte a call, several times the work of compressing a kilobyte. Any zlib reader reads
    /// it (`uncompress` takes every window).
    package static func pack(bytes input: [UInt8]) -> String {
        var stream = z_stream()
        precondition(receiptd_deflate_init(&stream, 1, windowBits, memoryLevel) == Z_OK, "zlib could not start")
        defer { deflateEnd(&stream) }
        var output = [UInt8](repeating: 0, count: Int(deflateBound(&stream, uLong(input.count))))
        let rc = output.withUnsafeMutableBufferPointer { out in
            input.withUnsafeBufferPointer { bytes in
                stream.next_in = UnsafeMutablePointer(mutating: bytes.baseAddress)
                stream.avail_in = uInt(bytes.count)
                stream.next_out = out.baseAddress
                stream.avail_out = uInt(out.count)
                return deflate(&stream, Z_FINISH)
            }
        }
        precondition(rc == Z_STREAM_END, "zlib deflate failed with the bound it computed")
        return "z\(input.count):" + Data(output[0..<Int(stream.total_out)]).base64EncodedString()
    }

    /// The window ``pack(bytes:)`` compresses with: 2^12 bytes.
    static let windowBits: Int32 = 12
    /// Its hash table's size (zlib's memLevel, 1 to 9; 8 is the default).
    static let memoryLevel: Int32 = 4

    /// ``pack(_:)``'s text back; nil when it is not such text.
    package static func unpack(_ packed: String) -> String? {
        unpackBytes(packed).map { String(decoding: $0, as: UTF8.self) }
    }

    /// ``pack(bytes:)``'s bytes back; nil when it is not such text.
    package static func unpackBytes(_ packed: some StringProtocol) -> [UInt8]? {
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
        return Array(output[0..<length])
    }
}
