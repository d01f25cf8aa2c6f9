import Clocks
import DatabaseEngine
import Identifiers
package import JSON
import Logging
package import ReceiptCore
import Storage
import Synchronization

/// Everything stored about a person, for their right of access (GDPR art. 15, CCPA): who they
/// are, their state now, and every row stored under their ids, a page of rows at a time so a long
/// history never sits in memory whole. `GET /v1/subscribers/{id}/export` streams it as one JSON
/// document (Docs/privacy.md describes it field by field).
///
/// Redacted: the shared secret V1 notifications carry (`password`), and other people's app user
/// ids (a transfer's other side reads ``ExportSubscriber/anotherUser``). Stored JSON (Apple's raw
/// payloads, notification bodies, event facts, webhook payloads) is given as JSON.
///
/// Each page is its own read, so a write during a long export may show in the tables read after
/// it; ``Export/exportedAt`` dates the start.
package struct ExportSubscriber: UseCase, Sendable {
    package let context: UseCaseContext
    /// Rows per read.
    let pageSize: Int

    /// What another person's app user id reads as in an export.
    package static let anotherUser = "(another user)"
    /// What a secret reads as.
    package static let redacted = "(redacted)"

    package init(context: UseCaseContext, pageSize: Int = 200) {
        self.context = context
        self.pageSize = max(1, pageSize)
    }

    /// A person's export: who they are, and their stored rows page by page (``pages``).
    package struct Export: Sendable {
        /// The id the person is known by, and their other ids.
        package let appUserID: String
        package let aliases: [String]
        /// When the export began (epoch ms).
        package let exportedAt: Int64
        /// Their state then; nil for someone known only by rows of their id (no purchase, no
        /// subscriber row).
        package let subscriber: SubscriberState.Current?
        /// The next page of rows, nil at the end; every table is given, in order, in one or more
        /// pages (an empty table in one empty page).
        package let pages: @Sendable () async throws -> Page?

        package init(
            appUserID: String, aliases: [String], exportedAt: Int64, subscriber: SubscriberState.Current?,
            pages: @escaping @Sendable () async throws -> Page?
        ) {
            (self.appUserID, self.aliases, self.exportedAt, self.subscriber) = (appUserID, aliases, exportedAt, subscriber)
            self.pages = pages
        }
    }

    /// Rows of one table, in their key's order.
    package struct Page: Sendable {
        package let table: String
        package let rows: [Row]
        /// Whether this is the table's first page, and its last.
        package let isFirst: Bool
        package let isLast: Bool

        package init(table: String, rows: [Row], isFirst: Bool, isLast: Bool) {
            (self.table, self.rows, self.isFirst, self.isLast) = (table, rows, isFirst, isLast)
        }
    }

    /// One stored row: its columns, in no particular order.
    package typealias Row = [(column: String, value: Value)]

    /// A column's value as the export gives it.
    package enum Value: Sendable, Equatable {
        case null
        case int(Int64)
        case text(String)
        /// Stored JSON, redacted.
        case json(JSONValue)
    }

    /// The export of the person `appUserID` (an id or an alias) names; ``ReceiptError/subscriberNotFound``
    /// when nobody has it.
    package func callAsFunction(_ appUserID: String) async throws(ReceiptError) -> Export {
        let now = clock.now()
        let person: PersonalData.Person
        let current: SubscriberState.Current?
        do {
            guard
                let found = try await database.read(
                    replicaSeeing: [appUserID], { db in try PersonalData(db).person(appUserID) }, dependents: { $0?.ids ?? [] })
            else { throw ReceiptError.subscriberNotFound }
            (person, current) = (found, try await state.current(found.appUserID, database: database, now: now))
        } catch let error as ReceiptError {
            throw error
        } catch {
            logger.error("reading a subscriber to export failed", metadata: ["error": "\(error)"])
            throw .internalFault
        }
        let cursor = Cursor(sections: PersonalData.sections(of: person))
        let (database, pageSize, logger) = (database, pageSize, logger)
        let ids = Set(person.ids.map { Identifier($0) })
        return Export(
            appUserID: person.appUserID, aliases: Array(person.ids.dropFirst()), exportedAt: now, subscriber: current,
            pages: {
                do {
                    return try await cursor.next(database: database, pageSize: pageSize, ids: ids)
                } catch {
                    logger.error("an export stopped part way", metadata: ["error": "\(error)"])
                    throw error
                }
            })
    }

    /// Where an export is: the section and the key of the last row given.
    final class Cursor: Sendable {
        private struct Position {
            var section = 0
            var after: SQLValue?
        }
        private let sections: [PersonalData.Section]
        private let position = Mutex(Position())

        init(sections: [PersonalData.Section]) { self.sections = sections }

        /// The next page, or nil at the end.
        func next(database: DatabaseQueue, pageSize: Int, ids: Set<Identifier>) async throws -> Page? {
            let at = position.withLock { $0 }
            guard at.section < sections.count else { return nil }
            let section = sections[at.section]
            let (after, limit) = (at.after, pageSize)
            let page = try await database.read(replicaSeeing: ids.map(\.string)) { db in
                try PersonalData(db).page(section, after: after, limit: limit)
            }
            let isLast = page.rows.count < limit
            position.withLock {
                $0 = isLast ? Position(section: at.section + 1) : Position(section: at.section, after: page.last)
            }
            return Page(
                table: section.table, rows: page.rows.map { ExportSubscriber.shown($0, ids: ids) }, isFirst: after == nil,
                isLast: isLast)
        }
    }

    /// One stored row as the export shows it: stored JSON as JSON, secrets and other people's
    /// ids redacted.
    static func shown(_ row: PersonalData.Row, ids: Set<Identifier>) -> Row {
        row.map { column, value in
            switch value {
            case nil: return (column, .null)
            case .int(let n)?: return (column, .int(n))
            case .text(let text)?:
                if Self.holdsJSON(column), let parsed = try? JSONValue.parse(Array(text.utf8)) {
                    return (column, .json(redact(parsed, ids: ids)))
                } else if column.hasSuffix("app_user_id"), !ids.contains(Identifier(text)) {
                    return (column, .text(anotherUser))
                } else if column == "event_key", text.hasPrefix("transfer:") {
                    // transfer:<original>:<at>:<to>: the receiving user's id, when someone else's, goes.
                    var parts = text.split(separator: ":", maxSplits: 3, omittingEmptySubsequences: false).map(String.init)
                    if parts.count == 4, !ids.contains(Identifier(parts[3])) { parts[3] = anotherUser }
                    return (column, .text(parts.joined(separator: ":")))
                } else {
                    return (column, .text(text))
                }
            }
        }
    }

    /// Columns that store JSON text.
    static func holdsJSON(_ column: String) -> Bool { column.hasSuffix("_json") || column == "body" }

    /// `value` with secrets and other people's ids replaced, at any depth.
    static func redact(_ value: JSONValue, ids: Set<Identifier>) -> JSONValue {
        switch value {
        case .object(let members):
            var out: [Identifier: JSONValue] = [:]
            for (key, member) in members {
                let name = key.description
                if name == "password" || name == "shared_secret" {
                    out[key] = .string(redacted)
                } else if name.hasSuffix("app_user_id"), case .string(let id) = member, !ids.contains(Identifier(id)) {
                    out[key] = .string(anotherUser)
                } else {
                    out[key] = redact(member, ids: ids)
                }
            }
            return .object(out)
        case .array(let items): return .array(items.map { redact($0, ids: ids) })
        default: return value
        }
    }
}
