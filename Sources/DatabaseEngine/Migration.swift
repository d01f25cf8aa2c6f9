import Crypto
import FoundationEssentials

/// One numbered SQL file from `Migrations/`, e.g. `0001_subscribers.sql`. Never edited once
/// applied: its SHA-256 is recorded and checked at every start.
package struct Migration: Sendable, Equatable {
    /// The number before the first `_`.
    package let version: Int
    /// The file name without `.sql`.
    package let name: String
    package let sql: String
    /// Lowercase hex SHA-256 of the file's bytes.
    package let checksum: String

    package init(version: Int, name: String, sql: String) {
        self.version = version
        self.name = name
        self.sql = sql
        self.checksum = SHA256.hash(data: Array(sql.utf8)).map { byte in
            let hex = String(byte, radix: 16)
            return byte < 16 ? "0" + hex : hex
        }.joined()
    }

    /// Where a dialect's migrations are under the migrations folder `root`: SQLite's in `root`
    /// itself, PostgreSQL's in `root/postgresql` (the same versions and names, in its dialect).
    package static func directory(for dialect: Database.Dialect, under root: String) -> String {
        switch dialect {
        case .sqlite: root
        case .postgresql: root + "/postgresql"
        }
    }

    /// Reads every `NNNN_name.sql` file in `directory`, ordered by version. Other files are
    /// ignored; two files with one version, or a malformed name ending in `.sql`, are errors.
    package static func load(from directory: String) throws(StorageError) -> [Migration] {
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: directory)
        } catch {
            throw StorageError(.migrationFile, "cannot read the migrations directory \(directory)")
        }
        var migrations: [Migration] = []
        for file in names.sorted() where file.hasSuffix(".sql") {
            let stem = String(file.dropLast(4))
            guard let underscore = stem.firstIndex(of: "_"), let version = Int(stem[..<underscore]), version > 0,
                stem[..<underscore].allSatisfy(\.isASCII)
            else {
                throw StorageError(.migrationFile, "migration file \(file) is not named NNNN_name.sql")
            }
            guard let data = FileManager.default.contents(atPath: directory + "/" + file),
                let sql = String(validating: Array(data), as: UTF8.self)
            else {
                throw StorageError(.migrationFile, "cannot read migration file \(file)")
            }
            if let other = migrations.first(where: { $0.version == version }) {
                throw StorageError(.migrationFile, "migrations \(other.name) and \(stem) share version \(version)")
            }
            migrations.append(Migration(version: version, name: stem, sql: sql))
        }
        return migrations.sorted { $0.version < $1.version }
    }
}
