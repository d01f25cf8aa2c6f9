/// Bounds on untrusted request bytes. Each limit has its own status when exceeded.
public struct HTTPParserLimits: Sendable, Equatable {
    /// Longest request line (method, target, version), without CRLF. Past it: 414.
    public var maxRequestLineBytes: Int
    /// Largest header section after the request line, CRLFs included. Past it: 431.
    public var maxHeaderBytes: Int
    /// Most header fields (trailer fields count too). Past it: 431.
    public var maxHeaderCount: Int
    /// Largest body after de-chunking. Past it: 413.
    public var maxBodyBytes: Int

    public init(
        maxRequestLineBytes: Int = 8 * 1024, maxHeaderBytes: Int = 16 * 1024,
        maxHeaderCount: Int = 100, maxBodyBytes: Int = 1024 * 1024
    ) {
        self.maxRequestLineBytes = maxRequestLineBytes
        self.maxHeaderBytes = maxHeaderBytes
        self.maxHeaderCount = maxHeaderCount
        self.maxBodyBytes = maxBodyBytes
    }
}
