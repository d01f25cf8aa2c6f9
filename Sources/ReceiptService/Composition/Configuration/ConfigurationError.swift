/// A configuration value that cannot be used. Names the key and the environment variable that
/// overrides it, never the value of a secret.
package struct ConfigurationError: Error, CustomStringConvertible, Sendable, Equatable {
    /// The dotted key, e.g. `http.port`.
    package let key: String
    package let message: String

    package var description: String {
        "configuration key `\(key)` (env \(ConfigLoader.environmentName(for: key))): \(message)"
    }
}

/// A `Config/` file that cannot be read or is not a JSON object of settings.
package struct ConfigurationFileError: Error, CustomStringConvertible, Sendable, Equatable {
    package let path: String
    package let reason: String

    package var description: String { "configuration file \(path): \(reason)" }
}
