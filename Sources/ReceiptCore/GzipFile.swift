import CZlib

/// A gzip file being written (zlib's gzopen/gzwrite, RFC 1952), readable by `gzip -d` and every
/// warehouse loader. Closed explicitly, so a failed close is an error, not a lost tail.
final class GzipFile {
    private var handle: gzFile?
    let path: String

    init(path: String) throws(ExportData.Failure) {
        guard let handle = gzopen(path, "wb6") else { throw .init("cannot create \(path)") }
        self.handle = handle
        self.path = path
    }

    func write(_ bytes: [UInt8]) throws(ExportData.Failure) {
        guard let handle, !bytes.isEmpty else { return }
        let written = bytes.withUnsafeBytes { gzwrite(handle, $0.baseAddress, UInt32($0.count)) }
        guard written == Int32(bytes.count) else { throw .init("cannot write \(path)") }
    }

    func close() throws(ExportData.Failure) {
        guard let handle else { return }
        self.handle = nil
        guard gzclose(handle) == Z_OK else { throw .init("cannot finish \(path)") }
    }

    deinit { if let handle { gzclose(handle) } }
}
