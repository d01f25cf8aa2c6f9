import Crypto

/// Copies every row of an SQLite database into a PostgreSQL one with the same migrations
/// applied (`receiptd copy-data`): the move from one machine to several.
///
/// Idempotent and resumable: each table is read in rowid order, a page per transaction, and a row
/// the target already has (by its primary key) is skipped, so a copy cut off anywhere is run again
/// to finish it, and a finished one run again copies nothing. Identity columns keep their values
/// and their sequences are moved past them. Then each table is compared: its row count and a
/// checksum over every row's values on both sides (order-free: the sum of each row's SHA-256),
/// so what the target holds is what the source held. The copied tables are analyzed, so the
/// planner knows their sizes from the first query on (until autovacuum analyzes them, the
/// document's joins would read whole tables). Copy from a stopped service or from a
/// `receiptd backup` file: rows changed in the source after they were copied are not copied again
/// (the comparison then reports the table).
package struct DataCopy {
    /// One table's outcome.
    package struct Table: Sendable, Equatable {
        package var name: String
        /// Rows inserted by this run (0 when the table was already copied).
        package var copied: Int
        package var sourceRows: Int
        package var targetRows: Int
        package var sourceChecksum: String
        package var targetChecksum: String
        package var matches: Bool { sourceRows == targetRows && sourceChecksum == targetChecksum }
    }

    /// The tables in the order their foreign keys need (the migrations' order).
    package static let tables = [
        "subscribers", "transactions", "pending_renewal_info", "latest_receipts", "ownership", "ownership_transfers",
        "verifications", "renewal_history", "events", "notifications", "refresh_checks", "changes", "shadow_diffs",
        "webhook_messages", "webhook_deliveries", "erasures", "aliases", "promotions", "product_states", "exchange_rates",
        "play_tokens", "play_notifications", "play_catch_up", "offer_signatures", "app_transactions", "retention_answers",
        "consumption_consent_rescinded", "app_store_calls", "mass_extensions", "erased_ids", "attributes", "refund_requests",
    ]

    /// The tables not copied: the rollups and what they were built from, rebuilt by the keeper from
    /// the copied rows (`rates_revision` included, so it rebuilds with the target's rates).
    package static let rebuilt = [
        "rollup_state", "rollup_holders", "rollup_days", "rollup_splits", "rollup_moments", "rollup_marks",
        "rates_revision",
    ]

    private let source: Database
    private let target: Database
    /// Rows per transaction.
    private let page: Int

    /// `source` must be SQLite and `target` PostgreSQL, both with every migration applied.
    package init(from source: Database, to target: Database, page: Int = 1_000) throws(StorageError) {
        guard source.dialect == .sqlite, target.dialect == .postgresql else {
            throw StorageError(.postgres, "copy-data copies an SQLite database into a PostgreSQL one")
        }
        self.source = source
        self.target = target
        self.page = page
    }

    /// Copies the tables in order (at most `limit` rows in all: a copy cut off, for the tests), then
    /// compares each.
    package func run(limit: Int = .max, progress: (String, Int) -> Void = { _, _ in }) throws -> [Table] {
        var columnsOf: [String: [String]] = [:]
        for table in Self.tables { columnsOf[table] = try columns(of: table) }
        var budget = limit
        var copied: [String: Int] = [:]
        for table in Self.tables where budget > 0 {
            let n = try copy(table, columns: columnsOf[table]!, budget: budget) { progress(table, $0) }
            copied[table] = n
            budget -= n
        }
        try target.execute("ANALYZE " + Self.tables.joined(separator: ", "))
        return try Self.tables.map { table in
            let (sourceRows, sourceSum) = try Self.checksum(table, in: source, columns: columnsOf[table]!)
            let (targetRows, targetSum) = try Self.checksum(table, in: target, columns: columnsOf[table]!)
            return Table(
                name: table, copied: copied[table] ?? 0, sourceRows: sourceRows, targetRows: targetRows,
                sourceChecksum: sourceSum, targetChecksum: targetSum)
        }
    }

    /// The source table's columns, in order.
    private func columns(of table: String) throws -> [String] {
        let info = try source.prepare("SELECT name FROM pragma_table_info(?) ORDER BY cid").bind([table])
        var names: [String] = []
        while try info.step() { names.append(info.text(0)!) }
        guard !names.isEmpty else { throw StorageError(.postgres, "the source has no table \(table)") }
        return names
    }

    private func copy(_ table: String, columns: [String], budget: Int, progress: (Int) -> Void) throws -> Int {
        let list = columns.joined(separator: ", ")
        let read = try source.prepare("SELECT rowid, \(list) FROM \(table) WHERE rowid > ? ORDER BY rowid LIMIT ?")
        let placeholders = (1...columns.count).map { "?\($0)" }.joined(separator: ", ")
        // Identity columns take the source's values (`GENERATED ALWAYS` ones, webhook_messages.seq,
        // are not SQLite columns and number themselves in rowid order).
        let insert = try target.prepare(
            "INSERT INTO \(table) (\(list)) OVERRIDING SYSTEM VALUE VALUES (\(placeholders)) ON CONFLICT DO NOTHING")
        var after: Int64 = 0
        var copied = 0
        while copied < budget {
            var rows: [[(any StatementValue)?]] = []
            _ = try read.bind([after, Int64(min(page, budget - copied))])
            while try read.step() {
                after = read.int(0)
                // As text: PostgreSQL reads its BIGINT columns from the same digits.
                rows.append((1...columns.count).map { read.text(Int32($0)) })
            }
            read.reset()
            if rows.isEmpty { break }
            try target.transaction {
                for row in rows {
                    try insert.bind(row).run()
                    copied += target.changes
                }
            }
            progress(copied)
            if rows.count < page { break }
        }
        try moveSequences(table)
        return copied
    }

    /// Moves the table's identity sequences past the values copied into them.
    private func moveSequences(_ table: String) throws {
        let identities = try target.prepare(
            """
            SELECT column_name FROM information_schema.columns
            WHERE table_schema = current_schema() AND table_name = ? AND is_identity = 'YES' AND identity_generation = 'BY DEFAULT'
            """
        ).bind([table])
        var names: [String] = []
        while try identities.step() { names.append(identities.text(0)!) }
        for column in names {
            _ = try target.scalarInt(
                """
                SELECT setval(pg_get_serial_sequence('\(table)', '\(column)'),
                    greatest((SELECT max(\(column)) FROM \(table)), 1), (SELECT max(\(column)) FROM \(table)) IS NOT NULL)
                """)
        }
    }

    /// The table's row count and the order-free sum of its rows' SHA-256 (each row: its `columns`'
    /// values, NULL told apart from any text), as hex.
    static func checksum(_ table: String, in db: Database, columns: [String]) throws -> (Int, String) {
        let q = try db.prepare("SELECT \(columns.joined(separator: ", ")) FROM \(table)")
        var rows = 0
        var sum: (UInt64, UInt64) = (0, 0)
        while try q.step() {
            rows += 1
            var hasher = SHA256()
            for i in 0..<Int32(columns.count) {
                if q.isNull(i) {
                    hasher.update(data: [0])
                } else {
                    let text = Array((q.text(i) ?? "").utf8)
                    hasher.update(data: [1])
                    withUnsafeBytes(of: UInt64(text.count).littleEndian) { hasher.update(bufferPointer: $0) }
                    hasher.update(data: text)
                }
            }
            let digest = Array(hasher.finalize())
            let high = digest[0..<8].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            let low = digest[8..<16].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            let (newLow, carry) = sum.1.addingReportingOverflow(low)
            sum = (sum.0 &+ high &+ (carry ? 1 : 0), newLow)
        }
        func hex(_ v: UInt64) -> String {
            let digits = String(v, radix: 16)
            return String(repeating: "0", count: 16 - digits.count) + digits
        }
        return (rows, hex(sum.0) + hex(sum.1))
    }
}
