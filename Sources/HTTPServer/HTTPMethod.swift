/// A request method token (RFC 9110 §9). Any token is representable; the common ones are named.
public struct HTTPMethod: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let get = HTTPMethod(rawValue: "GET")
    public static let head = HTTPMethod(rawValue: "HEAD")
    public static let post = HTTPMethod(rawValue: "POST")
    public static let put = HTTPMethod(rawValue: "PUT")
    public static let patch = HTTPMethod(rawValue: "PATCH")
    public static let delete = HTTPMethod(rawValue: "DELETE")
    public static let options = HTTPMethod(rawValue: "OPTIONS")
    public static let trace = HTTPMethod(rawValue: "TRACE")

    /// The methods the server parses; others are answered 501 before the router sees them.
    /// CONNECT (a proxy's) and extension methods are not recognized. TRACE is, so a route answers
    /// it 405 with `Allow` like any method it does not serve (RFC 9110 §15.5.6); nothing echoes it.
    public static let implemented: Set<HTTPMethod> = [.get, .head, .post, .put, .patch, .delete, .options, .trace]

    /// Safe (RFC 9110 §9.2.1): a read, which asks the server to change nothing.
    public var isSafe: Bool { self == .get || self == .head || self == .options || self == .trace }

    public var description: String { rawValue }
}

/// The protocol version of a request. Only HTTP/1.0 and HTTP/1.1 are served (others get 505).
public struct HTTPVersion: Hashable, Sendable, CustomStringConvertible {
    public let major: Int
    public let minor: Int
    public init(major: Int, minor: Int) {
        self.major = major
        self.minor = minor
    }

    public static let http1_0 = HTTPVersion(major: 1, minor: 0)
    public static let http1_1 = HTTPVersion(major: 1, minor: 1)

    public var description: String { "HTTP/\(major).\(minor)" }
}
