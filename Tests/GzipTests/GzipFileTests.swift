import CZlib
import Foundation
import Testing

@testable import Gzip

@Suite("GzipFile: written whole, read back by zlib")
struct GzipFileTests {
    @Test func whatIsWrittenReadsBackAfterClose() throws {
        let path = NSTemporaryDirectory() + "gzip-\(UInt64.random(in: 0...UInt64.max)).gz"
        defer { try? FileManager.default.removeItem(atPath: path) }
        let file = try GzipFile(path: path)
        try file.write(Array("{\"a\":1}\n".utf8))
        try file.write([])  // nothing to write is no failure
        try file.write(Array("{\"b\":\"é\"}\n".utf8))
        try file.close()
        try file.close()  // once closed, closing again does nothing
        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        #expect(bytes.prefix(2) == [0x1f, 0x8b])  // RFC 1952's magic
        let reader = try #require(gzopen(path, "rb"))
        var out = [UInt8](repeating: 0, count: 64)
        let read = out.withUnsafeMutableBytes { gzread(reader, $0.baseAddress, 64) }
        gzclose(reader)
        #expect(String(decoding: out.prefix(Int(read)), as: UTF8.self) == "{\"a\":1}\n{\"b\":\"é\"}\n")
    }

    @Test func aFileThatCannotBeCreatedSaysWhich() {
        #expect(throws: GzipFile.Failure(description: "cannot create /nonexistent/dir/x.gz")) {
            try GzipFile(path: "/nonexistent/dir/x.gz")
        }
    }
}
