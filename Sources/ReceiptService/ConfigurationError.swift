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
