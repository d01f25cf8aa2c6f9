import Foundation
import Logging
import ReceiptTesting
import Synchronization
import Testing

@testable import ReceiptCore
@testable import ReceiptService

private final class Lines: Sendable {
    private let lines = Mutex<[[UInt8]]>([])
    var sink: @Sendable ([UInt8]) -> Void { { [self] line in lines.withLock { $0.append(line) } } }
    var all: [[UInt8]] { lines.withLock { $0 } }
    var objects: [[String: Any]] {
        all.compactMap { try? JSONSerialization.jsonObject(with: Data($0)) as? [String: Any] }
    }
}

@Suite("JSON logs")
struct JSONLogHandlerTests {
    @Test func eachEventIsOneObjectOnOneLine() throws {
        let lines = Lines()
        var logger = Logger(label: "receiptd") { label in
            JSONLogHandler(label: label, level: .info, sink: lines.sink, clock: { 1_790_000_000_123 })
        }
        logger[metadataKey: "loop"] = "1"
        logger.info(
            "two\nlines \"quoted\"",
            metadata: ["request_id": "abc-1", "status": "200", "nested": ["k": "v"], "list": ["a", "b"]])
        logger.debug("below the level")
        logger.error("plain")
        #expect(lines.all.count == 2)
        #expect(lines.all.allSatisfy { $0.last == UInt8(ascii: "\n") && $0.dropLast().firstIndex(of: UInt8(ascii: "\n")) == nil })
        let first = try #require(lines.objects.first)
        #expect(first["time"] as? String == "2026-09-21T14:13:20.123Z")
        #expect(first["level"] as? String == "info")
        #expect(first["message"] as? String == "two\nlines \"quoted\"")
        #expect(first["request_id"] as? String == "abc-1")
        #expect(first["logger"] as? String == "receiptd")
        let fields = try #require(first["fields"] as? [String: Any])
        #expect(fields["status"] as? String == "200" && fields["loop"] as? String == "1")
        #expect((fields["nested"] as? [String: Any])?["k"] as? String == "v")
        #expect(fields["list"] as? [String] == ["a", "b"])
        #expect(fields["request_id"] == nil)
        let second = try #require(lines.objects.last)
        #expect(second["level"] as? String == "error" && second["request_id"] == nil)
        #expect((second["fields"] as? [String: String]) == ["loop": "1"])
        // The keys come in a fixed order, time first, for people reading raw lines too.
        #expect(String(decoding: lines.all[0], as: UTF8.self).hasPrefix(#"{"time":"2026-09-21T14:13:20.123Z","level":"info","#))
    }
}
