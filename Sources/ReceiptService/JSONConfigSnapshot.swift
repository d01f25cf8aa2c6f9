import Configuration
import FoundationEssentials

/// A `Config/*.json` file as a swift-configuration snapshot, parsed with FoundationEssentials'
/// `JSONDecoder`.
///
/// swift-configuration's own `JSONSnapshot` needs the whole of Foundation (for
/// `JSONSerialization`), which links ICU's data into the binary and costs several megabytes of
/// resident memory; this one keeps receiptd on FoundationEssentials.
///
/// Nested objects become dotted keys (`{"http": {"port": 8080}}` → `http.port`). Scalars keep
/// their JSON type: a number is not a string and `true` is not `1`; an integer may be read as a
/// double. Arrays of one scalar type can be read as the matching array type. `null` is absent.
public struct JSONConfigSnapshot: FileConfigSnapshot {
    public struct ParsingOptions: FileParsingOptions {
        public static var `default`: Self { .init() }
    }

    /// A value in the file that a reader asked for as another type.
    public struct TypeMismatch: Error, CustomStringConvertible {
        public let key: String
        public let requested: ConfigType
        public var description: String { "\(key) is not a \(requested.rawValue)" }
    }

    /// The file is not a JSON object of scalars, arrays of scalars and nested objects.
    public struct InvalidFile: Error, CustomStringConvertible {
        public let providerName: String
        public let reason: String
        public var description: String { "\(providerName): \(reason)" }
    }

    public let providerName: String
    let values: [String: Node]

    public init(data: RawSpan, providerName: String, parsingOptions: ParsingOptions) throws {
        self.providerName = providerName
        let bytes = data.withUnsafeBytes { Data($0) }
        let root: Node
        do {
            root = try JSONDecoder().decode(Node.self, from: bytes)
        } catch {
            throw InvalidFile(providerName: providerName, reason: "not valid JSON (\(error))")
        }
        guard case .object(let members) = root else {
            throw InvalidFile(providerName: providerName, reason: "the top level must be an object")
        }
        var flat: [String: Node] = [:]
        try Self.flatten(members, prefix: "", into: &flat, providerName: providerName)
        values = flat
    }

    public func value(forKey key: AbsoluteConfigKey, type: ConfigType) throws -> LookupResult {
        let name = key.components.joined(separator: ".")
        guard let node = values[name] else { return LookupResult(encodedKey: name, value: nil) }
        guard let content = node.content(as: type) else { throw TypeMismatch(key: name, requested: type) }
        return LookupResult(encodedKey: name, value: ConfigValue(content, isSecret: false))
    }

    public var description: String { "\(providerName)[\(values.count) values]" }
    public var debugDescription: String {
        let pairs = values.keys.sorted().map { "\($0)=\(values[$0]!)" }
        return "\(providerName)[\(pairs.joined(separator: ", "))]"
    }

    private static func flatten(
        _ members: [String: Node], prefix: String, into flat: inout [String: Node], providerName: String
    ) throws {
        for (name, node) in members {
            let key = prefix.isEmpty ? name : prefix + "." + name
            switch node {
            case .object(let inner):
                try flatten(inner, prefix: key, into: &flat, providerName: providerName)
            case .array(let items):
                if items.contains(where: { if case .object = $0 { true } else if case .array = $0 { true } else { false } }) {
                    throw InvalidFile(providerName: providerName, reason: "\(key): arrays may hold only scalars")
                }
                flat[key] = node
            case .null:
                continue
            default:
                flat[key] = node
            }
        }
    }
}

extension JSONConfigSnapshot {
    /// One JSON value, keeping the distinction between integers, other numbers and booleans.
    enum Node: Decodable, Sendable, CustomStringConvertible {
        case null
        case bool(Bool)
        case int(Int)
        case double(Double)
        case string(String)
        case array([Node])
        case object([String: Node])

        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if container.decodeNil() {
                self = .null
            } else if let value = try? container.decode(Bool.self) {
                self = .bool(value)
            } else if let value = try? container.decode(Int.self) {
                self = .int(value)
            } else if let value = try? container.decode(Double.self) {
                self = .double(value)
            } else if let value = try? container.decode(String.self) {
                self = .string(value)
            } else if let value = try? container.decode([Node].self) {
                self = .array(value)
            } else {
                self = .object(try container.decode([String: Node].self))
            }
        }

        var description: String {
            switch self {
            case .null: "null"
            case .bool(let v): String(v)
            case .int(let v): String(v)
            case .double(let v): String(v)
            case .string(let v): "\"\(v)\""
            case .array(let v): "[" + v.map(\.description).joined(separator: ",") + "]"
            case .object: "{…}"
            }
        }

        /// This value as `type`, or nil when it is another kind of value.
        func content(as type: ConfigType) -> ConfigContent? {
            switch (type, self) {
            case (.string, .string(let v)): return .string(v)
            case (.int, .int(let v)): return .int(v)
            case (.double, .double(let v)): return .double(v)
            case (.double, .int(let v)): return .double(Double(v))
            case (.bool, .bool(let v)): return .bool(v)
            case (.bytes, .string(let v)):
                return Data(base64Encoded: v).map { .bytes(Array($0)) }
            case (.stringArray, .array(let items)):
                return scalars(items) { if case .string(let v) = $0 { v } else { nil } }.map { .stringArray($0) }
            case (.intArray, .array(let items)):
                return scalars(items) { if case .int(let v) = $0 { v } else { nil } }.map { .intArray($0) }
            case (.doubleArray, .array(let items)):
                return scalars(items) { node -> Double? in
                    switch node {
                    case .double(let v): v
                    case .int(let v): Double(v)
                    default: nil
                    }
                }.map { .doubleArray($0) }
            case (.boolArray, .array(let items)):
                return scalars(items) { if case .bool(let v) = $0 { v } else { nil } }.map { .boolArray($0) }
            default:
                return nil
            }
        }

        private func scalars<T>(_ items: [Node], _ pick: (Node) -> T?) -> [T]? {
            var out: [T] = []
            out.reserveCapacity(items.count)
            for item in items {
                guard let value = pick(item) else { return nil }
                out.append(value)
            }
            return out
        }
    }
}
