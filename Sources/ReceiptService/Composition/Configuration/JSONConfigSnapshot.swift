package import Configuration
import FoundationEssentials
import JSON

/// A `Config/*.json` file as a swift-configuration snapshot, parsed by the JSON module (strict
/// RFC 8259: duplicate members and trailing commas are errors, not silently resolved).
///
/// swift-configuration's own `JSONSnapshot` needs the whole of Foundation (for
/// `JSONSerialization`), which links ICU's data into the binary and costs several megabytes of
/// resident memory; this one keeps receiptd on FoundationEssentials.
///
/// Nested objects become dotted keys (`{"http": {"port": 8080}}` → `http.port`). Scalars keep
/// their JSON type: a number is not a string and `true` is not `1`; an integer may be read as a
/// double. Arrays of one scalar type can be read as the matching array type. `null` is absent.
package struct JSONConfigSnapshot: FileConfigSnapshot {
    package struct ParsingOptions: FileParsingOptions {
        package static var `default`: Self { .init() }
    }

    /// A value in the file that a reader asked for as another type.
    package struct TypeMismatch: Error, CustomStringConvertible {
        package let key: String
        package let requested: ConfigType
        package var description: String { "\(key) is not a \(requested.rawValue)" }
    }

    /// The file is not a JSON object of scalars, arrays of scalars and nested objects.
    package struct InvalidFile: Error, CustomStringConvertible {
        package let providerName: String
        package let reason: String
        package var description: String { "\(providerName): \(reason)" }
    }

    package let providerName: String
    let values: [String: JSONValue]

    package init(data: RawSpan, providerName: String, parsingOptions: ParsingOptions) throws {
        self.providerName = providerName
        let bytes = data.withUnsafeBytes { Array($0) }
        let root: JSONValue
        do {
            root = try JSONValue.parse(bytes)
        } catch {
            throw InvalidFile(providerName: providerName, reason: "not valid JSON (\(error))")
        }
        guard case .object(let members) = root else {
            throw InvalidFile(providerName: providerName, reason: "the top level must be an object")
        }
        var flat: [String: JSONValue] = [:]
        try Self.flatten(members, prefix: "", into: &flat, providerName: providerName)
        values = flat
    }

    package func value(forKey key: AbsoluteConfigKey, type: ConfigType) throws -> LookupResult {
        let name = key.components.joined(separator: ".")
        guard let node = values[name] else { return LookupResult(encodedKey: name, value: nil) }
        guard let content = Self.content(of: node, as: type) else { throw TypeMismatch(key: name, requested: type) }
        return LookupResult(encodedKey: name, value: ConfigValue(content, isSecret: false))
    }

    package var description: String { "\(providerName)[\(values.count) values]" }
    package var debugDescription: String {
        let pairs = values.keys.sorted().map { "\($0)=\(String(decoding: values[$0]!.jsonBytes, as: UTF8.self))" }
        return "\(providerName)[\(pairs.joined(separator: ", "))]"
    }

    private static func flatten(
        _ members: [Identifier: JSONValue], prefix: String, into flat: inout [String: JSONValue], providerName: String
    ) throws {
        for (name, node) in members {
            let key = prefix.isEmpty ? name.string : prefix + "." + name.string
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
    /// `node` as `type`, or nil when it is another kind of value. Integers are numbers written
    /// without a fraction or exponent; an integer may be read as a double, never the reverse.
    static func content(of node: JSONValue, as type: ConfigType) -> ConfigContent? {
        switch (type, node) {
        case (.string, .string(let v)): return .string(v)
        case (.int, _): return integer(node).map { .int($0) }
        case (.double, .number(let v, _)): return .double(v)
        case (.bool, .bool(let v)): return .bool(v)
        case (.bytes, .string(let v)):
            return Data(base64Encoded: v).map { .bytes(Array($0)) }
        case (.stringArray, .array(let items)):
            return scalars(items) { if case .string(let v) = $0 { v } else { nil } }.map { .stringArray($0) }
        case (.intArray, .array(let items)):
            return scalars(items, integer).map { .intArray($0) }
        case (.doubleArray, .array(let items)):
            return scalars(items) { if case .number(let v, _) = $0 { v } else { nil } }.map { .doubleArray($0) }
        case (.boolArray, .array(let items)):
            return scalars(items) { if case .bool(let v) = $0 { v } else { nil } }.map { .boolArray($0) }
        default:
            return nil
        }
    }

    /// A number written as an integer that fits in `Int`.
    private static func integer(_ node: JSONValue) -> Int? {
        if case .number(_, let text) = node { Int(text) } else { nil }
    }

    private static func scalars<T>(_ items: [JSONValue], _ pick: (JSONValue) -> T?) -> [T]? {
        var out: [T] = []
        out.reserveCapacity(items.count)
        for item in items {
            guard let value = pick(item) else { return nil }
            out.append(value)
        }
        return out
    }
}
