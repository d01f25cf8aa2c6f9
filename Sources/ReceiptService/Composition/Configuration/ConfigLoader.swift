import Configuration
import FoundationEssentials
import Synchronization
import SystemPackage

/// Reads typed values from the layered sources and remembers every key it read, so the effective
/// configuration can be printed (``entries``) with secrets redacted.
///
/// Precedence, highest first: environment variables `RECEIPTD_<KEY>` (e.g. `http.maxConnections`
/// → `RECEIPTD_HTTP_MAX_CONNECTIONS`), `Config/<environment>.json`, `Config/default.json`, the
/// default in code. Secret keys are read only from the environment or from the file named by
/// `RECEIPTD_<KEY>_FILE`; a secret in a JSON file is refused.
package struct ConfigLoader: Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    /// One effective value and where it came from.
    package struct Entry: Sendable, Equatable {
        package let key: String
        package let value: String
        package let isSecret: Bool
    }

    private let reader: ConfigReader
    private let fileReader: ConfigReader
    private let environment: [String: String]
    private let entriesBox = EntriesBox()

    /// Builds the source layers. `configDirectory` holds `default.json` (required) and
    /// `<environmentName>.json` (optional).
    package init(configDirectory: String, environmentName: String, environment: [String: String]) async throws {
        let defaultFile = try await Self.file(configDirectory + "/default.json", allowMissing: false)
        let envFile = try await Self.file(configDirectory + "/\(environmentName).json", allowMissing: true)
        let env = EnvironmentVariablesProvider(environmentVariables: environment).prefixKeys(with: "receiptd")
        reader = ConfigReader(providers: [env, envFile, defaultFile])
        fileReader = ConfigReader(providers: [envFile, defaultFile])
        self.environment = environment
    }

    /// One JSON layer; an unreadable or malformed file is an error that names it.
    private static func file(_ path: String, allowMissing: Bool) async throws(ConfigurationFileError)
        -> FileProvider<JSONConfigSnapshot>
    {
        do {
            return try await FileProvider<JSONConfigSnapshot>(filePath: FilePath(path), allowMissing: allowMissing)
        } catch let error as JSONConfigSnapshot.InvalidFile {
            throw ConfigurationFileError(path: path, reason: error.reason)
        } catch {
            throw ConfigurationFileError(path: path, reason: "cannot be read (\(error))")
        }
    }

    /// The environment variable that overrides `key`.
    package static func environmentName(for key: String) -> String {
        var out = "RECEIPTD"
        for component in key.split(separator: ".") {
            out += "_"
            var previousLower = false
            for character in component {
                if character.isUppercase && previousLower { out += "_" }
                out += character.uppercased()
                previousLower = character.isLowercase || character.isNumber
            }
        }
        return out
    }

    /// Every key read so far, in reading order.
    package var entries: [Entry] { entriesBox.entries }

    /// The keys read so far with their values, secrets redacted: never the environment it was
    /// given, which holds the secrets themselves.
    package var description: String { entries.map { "\($0.key)=\($0.value)" }.joined(separator: "\n") }
    package var debugDescription: String { description }

    // MARK: Typed reads

    package func string(_ key: String, default value: String) throws(ConfigurationError) -> String {
        let result = try read(key, default: value) { try reader.requiredString(forKey: ConfigKey(key)) }
        record(key, result)
        return result
    }

    package func int(_ key: String, default value: Int, range: ClosedRange<Int>) throws(ConfigurationError) -> Int {
        let result = try read(key, default: value) { try reader.requiredInt(forKey: ConfigKey(key)) }
        guard range.contains(result) else {
            throw ConfigurationError(key: key, message: "must be in \(range.lowerBound)...\(range.upperBound), got \(result)")
        }
        record(key, String(result))
        return result
    }

    package func bool(_ key: String, default value: Bool) throws(ConfigurationError) -> Bool {
        let result = try read(key, default: value) { try reader.requiredBool(forKey: ConfigKey(key)) }
        record(key, String(result))
        return result
    }

    /// One of `allowed`.
    package func choice(_ key: String, default value: String, allowed: [String]) throws(ConfigurationError) -> String {
        let result = try read(key, default: value) { try reader.requiredString(forKey: ConfigKey(key)) }
        guard allowed.contains(result) else {
            throw ConfigurationError(key: key, message: "must be one of \(allowed.joined(separator: ", ")), got \"\(result)\"")
        }
        record(key, result)
        return result
    }

    /// A list: a JSON array of strings, or a comma-separated environment variable.
    package func strings(_ key: String, default value: [String]) throws(ConfigurationError) -> [String] {
        let result = try read(key, default: value) { try reader.requiredStringArray(forKey: ConfigKey(key)) }
            .map(Self.trimmed).filter { !$0.isEmpty }
        record(key, result.joined(separator: ","))
        return result
    }

    /// A list of secrets (comma-separated), from the environment or a secret file only; empty when unset.
    package func secretList(_ key: String) throws(ConfigurationError) -> [String] {
        guard let value = try secret(key) else { return [] }
        return value.split(separator: ",").map { Self.trimmed(String($0)) }.filter { !$0.isEmpty }
    }

    private static func trimmed(_ s: String) -> String {
        var t = s[...]
        while t.first == " " || t.first == "\t" { t = t.dropFirst() }
        while t.last == " " || t.last == "\t" { t = t.dropLast() }
        return String(t)
    }

    /// A duration given in milliseconds, at least 1 ms.
    package func milliseconds(_ key: String, default value: Int) throws(ConfigurationError) -> Duration {
        .milliseconds(try int(key, default: value, range: 1...86_400_000))
    }

    /// A secret: from `RECEIPTD_<KEY>` or the file named by `RECEIPTD_<KEY>_FILE` (trailing
    /// newline trimmed); never from a JSON file. Nil when unset.
    package func secret(_ key: String) throws(ConfigurationError) -> String? {
        if fileReader.string(forKey: ConfigKey(key), isSecret: true) != nil {
            throw ConfigurationError(
                key: key, message: "is a secret and must not be set in Config/ files; use the environment or a secret file")
        }
        let name = Self.environmentName(for: key)
        var value = environment[name]
        if value == nil, let file = environment[name + "_FILE"] {
            guard let data = FileManager.default.contents(atPath: file), var text = String(validating: Array(data), as: UTF8.self)
            else {
                throw ConfigurationError(key: key, message: "cannot read the secret file named by \(name)_FILE")
            }
            while text.last == "\n" || text.last == "\r" { text.removeLast() }
            value = text
        }
        if let v = value, v.isEmpty {
            throw ConfigurationError(key: key, message: "is set but empty")
        }
        entriesBox.append(Entry(key: key, value: value == nil ? "(unset)" : "<redacted>", isSecret: true))
        return value
    }

    // MARK: Helpers

    /// Returns the configured value, `defaultValue` when no source has the key, and throws
    /// naming the key when a source has it with the wrong type.
    private func read<T>(_ key: String, default defaultValue: T, _ body: () throws -> T) throws(ConfigurationError) -> T {
        do {
            return try body()
        } catch {
            // swift-configuration reports "missing" and "not convertible" with one error type;
            // a key some source holds as text is present, so the failure is a type error.
            if reader.string(forKey: ConfigKey(key)) == nil && !hasNonStringValue(key) { return defaultValue }
            throw ConfigurationError(key: key, message: "has the wrong type (\(error))")
        }
    }

    private func hasNonStringValue(_ key: String) -> Bool {
        reader.int(forKey: ConfigKey(key)) != nil || reader.bool(forKey: ConfigKey(key)) != nil
            || reader.double(forKey: ConfigKey(key)) != nil
    }

    private func record(_ key: String, _ value: String) {
        entriesBox.append(Entry(key: key, value: value, isSecret: false))
    }

    /// The reading log; a class so the loader's reads can stay non-mutating.
    private final class EntriesBox: Sendable {
        private let storage = Mutex<[Entry]>([])
        var entries: [Entry] { storage.withLock { $0 } }
        func append(_ entry: Entry) { storage.withLock { $0.append(entry) } }
    }
}
