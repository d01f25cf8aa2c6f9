package import DatabaseEngine
import Entitlements

/// Which stored rows are about one person (GDPR art. 15): read page by page for the
/// subscriber export. Synchronous: call inside `DatabaseQueue.read`.
///
/// A person is a subscriber's canonical id and their aliases. Their rows are those keyed by one
/// of those ids, those about the purchases they hold, the transfers of purchases that passed
/// through them, and the notifications that named them or their purchases. ``Erasure`` removes
/// the same rows but one table: a withdrawal of consent to share consumption data
/// (``ConsentStore``) outlives the person, as a suppression list does.
package struct PersonalData {
    /// Whom an export is about.
    package struct Person: Sendable, Equatable {
        package var appUserID: String
        /// `appUserID` and every alias.
        package var ids: [String]
        /// The original transactions they hold.
        package var originals: [String]
    }

    /// One table's rows about the person: `condition` with `values` bound, in `key` order.
    package struct Section: Sendable {
        package var table: String
        package var key: String
        var condition: String
        var values: [String]
    }

    /// A row as stored: each column's name and value (nil: NULL), in the table's column order.
    package typealias Row = [(column: String, value: SQLValue?)]

    private let db: Database

    package init(_ database: Database) { db = database }

    /// The tables whose rows may name a person who is no subscriber (nothing bought, a refused
    /// verification, an offer asked for, …), with the column that does.
    static let namedBy: [(table: String, column: String)] = [
        ("verifications", "app_user_id"), ("offer_signatures", "app_user_id"), ("retention_answers", "app_user_id"),
        ("app_transactions", "app_user_id"), ("play_notifications", "app_user_id"), ("play_tokens", "posted_by"),
        ("events", "app_user_id"), ("notifications", "app_user_id"), ("promotions", "app_user_id"),
        ("product_states", "app_user_id"), ("webhook_messages", "app_user_id"), ("webhook_deliveries", "app_user_id"),
        ("shadow_diffs", "app_user_id"), ("changes", "app_user_id"), ("ownership_transfers", "from_app_user_id"),
        ("ownership_transfers", "to_app_user_id"), ("attributes", "app_user_id"),
    ]

    /// The person `appUserID` (an id or an alias) names: a subscriber, or anyone whose id some
    /// row holds (``namedBy``); nil when nothing stored names it.
    package func person(_ appUserID: String) throws -> Person? {
        let store = ReceiptStore(db)
        let canonical = try store.canonical(appUserID)
        guard try store.isSubscriber(canonical) else {
            for (table, column) in Self.namedBy {
                let q = try db.cached("SELECT 1 FROM \(table) WHERE \(column) = ? LIMIT 1").bind([canonical])
                defer { q.reset() }
                if try q.step() { return Person(appUserID: canonical, ids: [canonical], originals: []) }
            }
            return nil
        }
        return Person(
            appUserID: canonical, ids: [canonical] + (try store.aliases(of: canonical).map(\.appUserID)),
            originals: try Merge(db).held(by: canonical))
    }

    /// The tables, in the export's order, with how to find the person's rows in each.
    package static func sections(of person: Person) -> [Section] {
        func among(_ column: String, _ values: [String]) -> String? {
            values.isEmpty ? nil : "\(column) IN (" + Array(repeating: "?", count: values.count).joined(separator: ", ") + ")"
        }
        func section(_ table: String, key: String, _ parts: [(String, [String])]) -> Section? {
            let used = parts.compactMap { column, values in among(column, values).map { ($0, values) } }
            guard !used.isEmpty else { return nil }
            return Section(
                table: table, key: key, condition: "(" + used.map(\.0).joined(separator: " OR ") + ")",
                values: used.flatMap(\.1))
        }
        let (ids, originals) = (person.ids, person.originals)
        // Their withdrawal of consent, by the Apple Accounts of their AppTransactions and purchases
        // (exported; kept through an erasure, which removes those two).
        var consent: Section?
        if let byApp = among("app_user_id", ids) {
            let byPurchase = among("original_transaction_id", originals)
            consent = Section(
                table: "consumption_consent_rescinded", key: "app_transaction_id",
                condition: "(app_transaction_id IN (SELECT app_transaction_id FROM app_transactions WHERE \(byApp))"
                    + (byPurchase.map { " OR app_transaction_id IN (SELECT app_transaction_id FROM transactions WHERE \($0))" }
                        ?? "")
                    + ")",
                values: ids + originals)
        }
        return [
            section("subscribers", key: "app_user_id", [("app_user_id", ids)]),
            section("aliases", key: "alias", [("app_user_id", ids)]),
            section("ownership", key: "original_transaction_id", [("original_transaction_id", originals)]),
            section(
                "ownership_transfers", key: "id",
                [("original_transaction_id", originals), ("from_app_user_id", ids), ("to_app_user_id", ids)]),
            section("transactions", key: "transaction_id", [("original_transaction_id", originals)]),
            section("pending_renewal_info", key: "original_transaction_id", [("original_transaction_id", originals)]),
            section("renewal_history", key: "id", [("original_transaction_id", originals)]),
            section("latest_receipts", key: "original_transaction_id", [("original_transaction_id", originals)]),
            section("refresh_checks", key: "original_transaction_id", [("original_transaction_id", originals)]),
            section("refund_requests", key: "notification_id", [("original_transaction_id", originals)]),
            section("play_tokens", key: "reference", [("chain", originals), ("posted_by", ids)]),
            section("play_notifications", key: "message_id", [("app_user_id", ids)]),
            section("offer_signatures", key: "id", [("app_user_id", ids)]),
            section("app_transactions", key: "app_transaction_id", [("app_user_id", ids)]),
            section(
                "retention_answers", key: "request_identifier",
                [("app_user_id", ids), ("original_transaction_id", originals)]),
            section("notifications", key: "id", [("app_user_id", ids), ("original_transaction_id", originals)]),
            section("verifications", key: "id", [("app_user_id", ids)]),
            section("events", key: "id", [("app_user_id", ids)]),
            section("shadow_diffs", key: "id", [("app_user_id", ids)]),
            section("changes", key: "sequence", [("app_user_id", ids)]),
            section("webhook_messages", key: "id", [("app_user_id", ids)]),
            section("webhook_deliveries", key: "id", [("app_user_id", ids)]),
            section("promotions", key: "id", [("app_user_id", ids)]),
            section("attributes", key: "id", [("app_user_id", ids)]),
            section("product_states", key: "slot", [("app_user_id", ids)]),
            among("original_transaction_id", originals).map { byOriginal in
                Section(
                    table: "app_store_calls", key: "id",
                    condition: "(subject IN (SELECT original_transaction_id FROM transactions WHERE \(byOriginal))"
                        + " OR subject IN (SELECT transaction_id FROM transactions WHERE \(byOriginal)))",
                    values: originals + originals)
            },
            consent,
        ].compactMap { $0 }
    }

    /// Up to `limit` of the section's rows after the one whose key is `after` (nil: from the
    /// first), and the last row's key (nil when the page is empty).
    package func page(_ section: Section, after: SQLValue?, limit: Int) throws -> (rows: [Row], last: SQLValue?) {
        let sql =
            "SELECT * FROM \(section.table) WHERE \(section.condition)"
            + (after == nil ? "" : " AND \(section.key) > ?") + " ORDER BY \(section.key) LIMIT ?"
        var values: [(any StatementValue)?] = section.values
        switch after {
        case .int(let n)?: values.append(n)
        case .text(let t)?: values.append(t)
        case nil: break
        }
        values.append(Int64(limit))
        let q = try db.cached(sql).bind(values)
        var rows: [Row] = []
        var last: SQLValue?
        while try q.step() {
            var row: Row = []
            for column in 0..<q.columnCount {
                let name = q.columnName(column)
                let value: SQLValue? =
                    q.isNull(column) ? nil : q.isInteger(column) ? .int(q.int(column)) : q.text(column).map(SQLValue.text)
                if name == section.key { last = value }
                row.append((name, value))
            }
            rows.append(row)
        }
        return (rows, last)
    }
}
