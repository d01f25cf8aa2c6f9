import Clocks
import Entitlements
import FoundationEssentials
import Glibc
import JSON
package import Logging
import Synchronization

/// swift-log to JSON lines, one object per line, for log collectors:
/// `{"time":"2026-11-22T10:00:00.123Z","level":"info","message":"…","request_id":"…","logger":"receiptd","fields":{…}}`.
/// `request_id` is lifted out of the metadata when present; every other metadata value goes under
/// `fields` (sorted keys), so no field can collide with the five above.
package struct JSONLogHandler: LogHandler {
    package var logLevel: Logger.Level
    package var metadata: Logger.Metadata = [:]
    package var metadataProvider: Logger.MetadataProvider?
    private let label: String
    private let sink: @Sendable ([UInt8]) -> Void
    private let clock: @Sendable () -> Int64

    /// - Parameters:
    ///   - sink: receives each line with its newline; standard error by default, in one `write`.
    ///   - clock: epoch milliseconds for `time`.
    package init(
        label: String, level: Logger.Level, sink: @escaping @Sendable ([UInt8]) -> Void = JSONLogHandler.standardError,
        clock: @escaping @Sendable () -> Int64 = WallClock.system.now
    ) {
        self.label = label
        self.logLevel = level
        self.sink = sink
        self.clock = clock
    }

    package subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    package func log(event: LogEvent) {
        var fields = metadata
        if let provided = metadataProvider?.get() { fields.merge(provided) { $1 } }
        if let given = event.metadata { fields.merge(given) { $1 } }
        let requestID = fields.removeValue(forKey: "request_id")
        var line: [UInt8] = []
        line.reserveCapacity(256)
        line += #"{"time":"#.utf8
        line += JSONValue.string(CivilTime.rfc3339(clock())).jsonBytes
        line += #","level":"#.utf8
        line += JSONValue.string(event.level.rawValue).jsonBytes
        line += #","message":"#.utf8
        line += JSONValue.string(event.message.description).jsonBytes
        if let requestID {
            line += #","request_id":"#.utf8
            line += Self.json(requestID).jsonBytes
        }
        line += #","logger":"#.utf8
        line += JSONValue.string(label).jsonBytes
        if !fields.isEmpty {
            line += #","fields":"#.utf8
            line += JSONValue.object(strings: fields.mapValues(Self.json)).jsonBytes
        }
        line += "}\n".utf8
        sink(line)
    }

    static func json(_ value: Logger.Metadata.Value) -> JSONValue {
        switch value {
        case .string(let s): .string(s)
        case .stringConvertible(let c): .string(c.description)
        case .array(let values): .array(values.map(json))
        case .dictionary(let d): .object(strings: d.mapValues(json))
        }
    }

    private static let writing = Mutex(())

    /// One `write(2)` per line under a lock, so lines from several threads never interleave.
    package static let standardError: @Sendable ([UInt8]) -> Void = { line in
        writing.withLock { _ in
            line.withUnsafeBytes { buffer in
                var offset = 0
                while offset < buffer.count {
                    let n = write(2, buffer.baseAddress! + offset, buffer.count - offset)
                    if n <= 0 {
                        if n < 0 && errno == EINTR { continue }
                        return
                    }
                    offset += n
                }
            }
        }
    }
}
