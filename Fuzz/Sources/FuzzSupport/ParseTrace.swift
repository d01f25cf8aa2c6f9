/// What one parser made of a byte stream: the requests it completed, in order, and how it stopped.
/// Both receiptd's parser and llhttp are reduced to this, so they can be compared field by field.
public struct ParseTrace: Equatable, Sendable, CustomStringConvertible {
    public var messages: [Message] = []
    public var outcome: Outcome = .needMore
    /// The head of a request whose body had not ended when the input did (llhttp only).
    public var pendingHead: Message?

    public init() {}

    public struct Message: Equatable, Sendable, CustomStringConvertible {
        public var method: String
        public var target: String
        public var version: Version
        /// Field lines in order, names as sent, values without surrounding whitespace.
        public var headers: [Field]
        public var trailers: [Field]
        /// The de-chunked body.
        public var body: [UInt8]
        /// Offset just past the message's last byte, from the start of the input.
        public var end: Int
        public var keepAlive: Bool

        public var description: String {
            "\(method) \(target) HTTP/\(version.major).\(version.minor) headers=\(headers) trailers=\(trailers) "
                + "body=\(body.count)B end=\(end) keepAlive=\(keepAlive)"
        }
    }

    public struct Version: Equatable, Sendable {
        public var major: Int
        public var minor: Int
        public init(major: Int, minor: Int) {
            self.major = major
            self.minor = minor
        }
    }

    public struct Field: Equatable, Sendable, CustomStringConvertible {
        public var name: String
        public var value: String
        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
        public var description: String { "\(name): \(value)" }
    }

    public enum Outcome: Equatable, Sendable {
        /// The input ran out: between messages, or inside one.
        case needMore
        /// The bytes after the last complete message cannot be a request.
        case error(String)
        /// The parser stops reading after the last message (it closes the connection, or the
        /// connection was upgraded to another protocol); later bytes are not HTTP/1.1 requests.
        case stopped
    }

    public var description: String {
        (messages.map { "  \($0)" } + ["  outcome: \(outcome)"]).joined(separator: "\n")
    }
}

extension ParseTrace.Field {
    /// A field as a value's surrounding spaces and tabs removed, bytes decoded as receiptd decodes
    /// them (UTF-8, invalid sequences replaced).
    init(name: [UInt8], value: [UInt8]) {
        var start = value.startIndex
        var end = value.endIndex
        while start < end && (value[start] == 0x20 || value[start] == 0x09) { start += 1 }
        while end > start && (value[end - 1] == 0x20 || value[end - 1] == 0x09) { end -= 1 }
        self.init(name: String(decoding: name, as: UTF8.self), value: String(decoding: value[start..<end], as: UTF8.self))
    }
}
