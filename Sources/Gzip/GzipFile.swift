import CZlib

/// A gzip file being written (zlib's gzopen/gzwrite, RFC 1952), readable by `gzip -d` and every
/// warehouse loader. Closed explicitly, so a failed close is an error, not a lost tail.
package final class GzipFile {
    /// What could not be done, naming the file.
    package struct Failure: Error, Sendable, Equatable, CustomStringConvertible {
        package let description: String
    }

    private var handle: gzFile?
    package let path: String

    package init(path: String) throws(Failure) {
        guard let handle = gzopen(path, "wb6") else { throw Failure(description: "cannot create \(path)") }
        self.handle = handle
        self.path = path
    }

    package func write(_ bytes: [UInt8]) throws(Failure) {
        guard let handle, !bytes.isEmpty else { return }
        let written = bytes.withUnsafeBytes { gzwrite(handle, $0.baseAddress, UInt32($0.count)) }
        guard written == Int32(bytes.count) else { throw Failure(description: "cannot write \(path)") }
    }

    package func close() throws(Failure) {
        guard let handle else { return }
        self.handle = nil
        guard gzclose(handle) == Z_OK else { throw Failure(description: "cannot finish \(path)") }
    }

    deinit { if let handle { gzclose(handle) } }
}
