/// What went wrong talking to Google Play, in words safe to log: never a key, a token or a
/// purchase token.
package enum GooglePlayError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The service account's key, or Google's answer to it, would not do.
    case credentials(String)
    /// Google answered with something that is not what its API documents.
    case unexpectedAnswer(String)

    package var description: String {
        switch self {
        case .credentials(let why): "Google Play credentials: \(why)"
        case .unexpectedAnswer(let why): "Google Play's answer: \(why)"
        }
    }
}
