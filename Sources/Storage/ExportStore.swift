package import DatabaseEngine

/// What `receiptd export-data` reads (Docs/export.md): the rows of transactions (with money),
/// events and subscribers last written in a period, a page at a time in the order of the day
/// they were written, with the columns the documented schema names and nothing else (no raw
/// store payloads, no app account tokens).
package struct ExportStore {
    private let db: Database

    package init(_ database: Database) { db = database }

    /// A column of an exported table: its name in the files, the SQL that reads it, its type.
    package struct Column: Sendable, Equatable {
        package enum Kind: String, Sendable { case integer, text }
        package var name: String
        package var sql: String
        package var kind: Kind
    }

    /// An exported table: its columns; `written` (epoch ms) places each row in a day; `key`
    /// (unique, with `written` the order of the pages) is what a warehouse upserts by.
    package struct Table: Sendable, Equatable {
        package var name: String
        package var from: String
        package var written: String
        package var key: Column
        package var columns: [Column]
    }

    /// A row's values in its table's column order.
    package enum Value: Sendable, Equatable {
        case integer(Int64)
        case text(String)
        case null
    }

    /// Where the previous page ended: its last row's `written` and key.
    package struct Cursor: Sendable, Equatable {
        package var written: Int64
        package var key: Value

        package init(written: Int64, key: Value) {
            self.written = written
            self.key = key
        }
    }

    private static func integer(_ name: String, _ sql: String? = nil) -> Column {
        Column(name: name, sql: sql ?? "t.\(name)", kind: .integer)
    }
    private static func text(_ name: String, _ sql: String? = nil) -> Column {
        Column(name: name, sql: sql ?? "t.\(name)", kind: .text)
    }

    package static let transactions = Table(
        name: "transactions",
        from: "transactions t LEFT JOIN ownership o ON o.original_transaction_id = t.original_transaction_id",
        written: "t.updated_at", key: text("transaction_id"),
        columns: [
            text("transaction_id"), text("original_transaction_id"), text("app_user_id", "o.app_user_id"), text("store"),
            text("bundle_id"), text("environment"), text("product_id"), integer("purchase_date"),
            integer("original_purchase_date"), integer("expires_date"), integer("cancellation_date"),
            integer("cancellation_reason"), integer("quantity"), integer("is_trial_period"),
            integer("is_in_intro_offer_period"), integer("is_upgraded"), text("ownership_type"),
            text("subscription_group_id"), text("web_order_line_item_id"), text("promotional_offer_id"),
            text("offer_code_ref_name"), integer("price"), text("currency"), text("price_source"), text("storefront"),
            integer("offer_type"), text("offer_discount_type"), text("offer_period"), text("transaction_reason"),
            text("revocation_type"), integer("revocation_percentage"), text("billing_plan_type"),
            integer("commitment_period_number"), integer("commitment_total_periods"), integer("commitment_price"),
            integer("commitment_expires_date"), text("app_transaction_id"),
            integer("reversed_refund_date"), integer("refund_reversed_at"), integer("first_seen_at"), integer("updated_at"),
        ])

    package static let events = Table(
        name: "events", from: "events t", written: "t.recorded_at", key: integer("id"),
        columns: [
            integer("id"), text("app_user_id"), text("event_key"), text("type"), integer("at"), text("product_id"),
            text("original_transaction_id"), text("transaction_id"), integer("recorded_at"),
        ])

    package static let subscribers = Table(
        name: "subscribers", from: "subscribers t", written: "t.updated_at", key: text("app_user_id"),
        columns: [text("app_user_id"), integer("created_at"), integer("updated_at"), integer("first_seen_at")])

    package static let tables = [transactions, events, subscribers]

    /// Up to `limit` rows of `table` written in [`since`, `until`), after `cursor`, in the order
    /// of `written` then the key; each with its `written`, for the day it belongs to.
    package func page(_ table: Table, since: Int64, until: Int64, after cursor: Cursor?, limit: Int) throws -> [(
        written: Int64, values: [Value]
    )] {
        let list = table.columns.map(\.sql).joined(separator: ", ")
        let order = "\(table.written), \(table.key.sql)"
        var sql = "SELECT \(table.written), \(list) FROM \(table.from) WHERE \(table.written) >= ? AND \(table.written) < ?"
        var values: [(any StatementValue)?] = [since, until]
        if let cursor {
            sql += " AND (\(table.written) > ? OR (\(table.written) = ? AND \(table.key.sql) > ?))"
            values += [cursor.written, cursor.written]
            switch cursor.key {
            case .integer(let n): values.append(n)
            case .text(let s): values.append(s)
            case .null: values.append(nil)
            }
        }
        let q = try db.cached(sql + " ORDER BY \(order) LIMIT ?").bind(values + [Int64(limit)])
        var rows: [(written: Int64, values: [Value])] = []
        while try q.step() {
            let row = table.columns.enumerated().map { i, column -> Value in
                let c = Int32(i + 1)
                if q.isNull(c) { return .null }
                return column.kind == .integer ? .integer(q.int(c)) : .text(q.text(c)!)
            }
            rows.append((q.int(0), row))
        }
        return rows
    }
}
