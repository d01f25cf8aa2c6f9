/// A configuration value that cannot be used. Names the key and the environment variable that
/// overrides it, never the value of a secret.
public struct ConfigurationError: Error, CustomStringConvertible, Sendable, Equatable {
    /// The dotted key, e.g. `http.port`.
    public let key: String
    public let message: String

    public var description: String {
        "configuration key `\(key)` (env \(ConfigLoader.environmentName(for: key))): \(message)"
    }
}

/// A `Config/` file that cannot be read or is not a JSON object of settings.
public struct ConfigurationFileError: Error, CustomStringConvertible, Sendable, Equatable {
    public let path: String
    public let reason: String

    public var description: String { "configuration file \(path): \(reason)" }
}
