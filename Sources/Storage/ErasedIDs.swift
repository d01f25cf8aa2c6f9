import Crypto
package import DatabaseEngine

/// The people erased lately, by the SHA-256 of each of their ids (never the id), so that a
/// write which began before an erasure (a refresh, a verification waiting on Apple or Google,
/// the rollups' keeper) cannot write their id back: every such write calls ``check(_:since:)``
/// in its transaction. Kept for ``window``, longer than any call to a store takes
/// (Migrations/0036_erased_ids.sql).
package struct ErasedIDs {
    /// How long an erased id's digest is kept: a day.
    package static let window: Int64 = 86_400_000

    /// A write began before one of its people was erased; nothing of it may be written.
    package struct ErasedMeanwhile: Error, Equatable {
        package init() {}
    }

    /// The SQLSTATE a whole save raises for ``ErasedMeanwhile`` (``ReceiptStore/saveWhole(_:for:begun:now:)``,
    /// Migrations/postgresql/0045_whole_saves.sql), so that what it was still is after the commit.
    package static let erasedMeanwhileState = "RD002"

    /// `error` as what it means: ``ErasedMeanwhile`` for the server's ``erasedMeanwhileState``, else itself.
    package static func meaning(of error: any Error) -> any Error {
        (error as? StorageError)?.sqlState == erasedMeanwhileState ? ErasedMeanwhile() : error
    }

    let db: Database

    package init(_ db: Database) { self.db = db }

    /// The digest an id is kept by: SHA-256 of its UTF-8 bytes, in hex.
    package static func digest(_ id: String) -> String {
        var hex: [UInt8] = []
        hex.reserveCapacity(64)
        for byte in SHA256.hash(data: Array(id.utf8)) {
            hex.append(hexDigits[Int(byte >> 4)])
            hex.append(hexDigits[Int(byte & 0xF)])
        }
        return String(decoding: hex, as: UTF8.self)  // written digit by digit, it was a string a byte
    }
    private static let hexDigits = Array("0123456789abcdef".utf8)

    /// Records `ids` erased at `now`, in the erasure's transaction, and forgets digests older than
    /// ``window``.
    package func record(_ ids: [String], at now: Int64) throws {
        try db.cached("DELETE FROM erased_ids WHERE erased_at < ?").bind([now - Self.window]).run()
        let insert = try db.cached(
            """
            INSERT INTO erased_ids (digest, erased_at) VALUES (?, ?)
            ON CONFLICT (digest) DO UPDATE SET erased_at = excluded.erased_at
            """)
        for id in ids { try insert.bind([Self.digest(id), now]).run() }
    }

    /// Throws ``ErasedMeanwhile`` when one of `ids` was erased at or after `began` (when the
    /// write's work started: before it asked a store, or read what it computes from).
    package func check(_ ids: [String], since began: Int64) throws {
        if try anyErased(ids, since: began) { throw ErasedMeanwhile() }
    }

    /// ``anyErased(_:since:)``'s statement for `count` ids, the usual counts written once.
    static func anyErasedSQL(_ count: Int) -> String {
        "SELECT count(*) FROM erased_ids WHERE erased_at >= ? AND digest IN ("
            + Array(repeating: "?", count: count).joined(separator: ", ") + ")"
    }
    static let anyErasedSQLs = (0..<8).map(anyErasedSQL)

    /// Whether one of `ids` was erased at or after `began`. One statement, one round trip: it is
    /// on every save's path.
    package func anyErased(_ ids: [String], since began: Int64) throws -> Bool {
        guard let q = try anyErasedRead(ids, since: began) else { return false }
        defer { q.reset() }
        return try q.firstInt() ?? 0 > 0
    }

    /// ``anyErased(_:since:)``'s read, bound (nil for no ids): a caller may send it ahead with
    /// others (``Database/prefetch(_:)``).
    package func anyErasedRead(_ ids: [String], since began: Int64) throws -> Statement? {
        var digests: [String] = []
        for digest in ids.map(Self.digest) where !digests.contains(digest) { digests.append(digest) }
        guard !digests.isEmpty else { return nil }
        return try db.cached(
            digests.count < Self.anyErasedSQLs.count ? Self.anyErasedSQLs[digests.count] : Self.anyErasedSQL(digests.count)
        ).bind([began] + digests.map { $0 as any StatementValue })
    }
}
