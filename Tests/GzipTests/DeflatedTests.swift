import Foundation
import Testing

@testable import Gzip

@Suite struct DeflatedTests {
    @Test func textComesBackAndShrinks() {
        let text = String(
            repeating: "production\trevenue\tgross\tflow\tcom.x\tapp_store\t\t20454\t20454\t-\t+\t\t9990\t1\n", count: 40)
        let packed = Deflated.pack(text)
        #expect(packed.hasPrefix("z\(text.utf8.count):"))
        #expect(packed.utf8.count * 10 < text.utf8.count)
        #expect(Deflated.unpack(packed) == text)
        #expect(Deflated.unpack(Deflated.pack("")) == "")
        #expect(Deflated.unpack(Deflated.pack("é ✓")) == "é ✓")
    }

    /// Bytes of any kind, and text longer than the window, come back whole; the stream's header
    /// names the window (RFC 1950: CINFO is its log2 − 8).
    @Test func bytesAndTextLongerThanTheWindowComeBack() throws {
        var rng = SystemRandomNumberGenerator()
        let noise = (0..<20_000).map { _ in UInt8.random(in: 0...255, using: &rng) }
        let rows = Array(String(repeating: "production\tmrr\tstock\tcom.x\t20454\t+\t-\t9990\n", count: 2_000).utf8)
        for bytes in [noise, rows, noise + rows + noise, []] {
            let packed = Deflated.pack(bytes: bytes)
            #expect(Deflated.unpackBytes(packed) == bytes)
            let stream = try #require(Data(base64Encoded: String(packed.split(separator: ":")[1])))
            #expect(stream.first == 0x48)  // deflate, a window of 2^12 bytes
        }
        #expect(Deflated.pack(bytes: rows).utf8.count * 50 < rows.count)
    }

    @Test func anythingElseIsNil() {
        let packed = Deflated.pack("some rows")
        for bad in ["", "rows", "z20:" + packed.split(separator: ":")[1], "z3:AAAA", "zx:" + packed.split(separator: ":")[1]] {
            #expect(Deflated.unpack(bad) == nil, "\(bad)")
        }
    }
}
