import Clocks
import DatabaseEngine
import Identifiers
import JSON
import Logging
package import ReceiptCore
import Storage
import Synchronization

/// Everything stored about a person, for their right of access (GDPR art. 15, CCPA): one JSON
/// document (Docs/privacy.md describes it field by field), produced a page of rows at a time so
/// a long history never sits in memory whole. `GET /v1/subscribers/{id}/export` streams it.
///
/// Redacted: the shared secret V1 notifications carry (`password`), and other people's app user
/// ids (a transfer's other side reads ``ExportSubscriber/anotherUser``). Stored JSON (Apple's raw
/// payloads, notification bodies, event facts, webhook payloads) is embedded as JSON.
///
/// Each page is its own read, so a write during a long export may show in the tables read after
/// it; `exported_at` dates the start.
package struct ExportSubscriber: UseCase, Sendable {
    package let context: UseCaseContext
    /// Rows per read.
    let pageSize: Int

    /// What another person's app user id reads as in an export.
    package static let anotherUser = "(another user)"
    /// What a secret reads as.
    package static let redacted = "(redacted)"
    /// The document's `format`.
    package static let format = "receiptd-export/1"

    package init(context: UseCaseContext, pageSize: Int = 200) {
        self.context = context
        self.pageSize = max(1, pageSize)
    }

    /// The export's bytes, part by part: `next()` gives the next part, nil at the end.
    package struct Parts: Sendable {
        package let next: @Sendable () async throws -> [UInt8]?
    }

    /// The export of the person `appUserID` (an id or an alias) names; ``ReceiptError/subscriberNotFound``
    /// before any byte when nobody has it.
    package func callAsFunction(_ appUserID: String) async throws(ReceiptError) -> Parts {
        let now = clock.now()
        let person: PersonalData.Person
        // Nil for someone known only by rows of their id (no purchase, no subscriber row).
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
        let head = JSONValue.object([
            "format": .string(Self.format), "app_user_id": .string(person.appUserID),
            "aliases": .array(person.ids.dropFirst().map(JSONValue.string)), "exported_at": SubscriberDocument.time(now),
            "subscriber": current.map { $0.document.rendered(version: $0.version, now: now, explain: true) } ?? .null,
        ]).jsonBytes.dropLast()  // `}`: the tables follow
        let cursor = Cursor(sections: PersonalData.sections(of: person), head: Array(head) + #","tables":{"#.utf8)
        let (database, pageSize, logger) = (database, pageSize, logger)
        let ids = Set(person.ids.map { Identifier($0) })
        return Parts {
            do {
                return try await cursor.next(database: database, pageSize: pageSize, ids: ids)
            } catch {
                logger.error("an export stopped part way", metadata: ["error": "\(error)"])
                throw error
            }
        }
    }

    /// Where an export is: the section and the key of the last row written.
    final class Cursor: Sendable {
        private struct Position {
            var head: [UInt8]?
            var section = 0
            var after: SQLValue?
            var opened = false
            var done = false
        }
        private let sections: [PersonalData.Section]
        private let position: Mutex<Position>

        init(sections: [PersonalData.Section], head: [UInt8]) {
            self.sections = sections
            position = Mutex(Position(head: head))
        }

        /// The next part: the head, a page of a table (opening and closing it), or the end.
        func next(database: DatabaseQueue, pageSize: Int, ids: Set<Identifier>) async throws -> [UInt8]? {
            var at = position.withLock { $0 }
            if let head = at.head {
                position.withLock { $0.head = nil }
                return head
            }
            guard !at.done else { return nil }
            guard at.section < sections.count else {
                position.withLock { $0.done = true }
                return Array("}}".utf8)
            }
            let section = sections[at.section]
            let (after, limit) = (at.after, pageSize)
            let page = try await database.read(replicaSeeing: ids.map(\.string)) { db in
                try PersonalData(db).page(section, after: after, limit: limit)
            }
            var out: [UInt8] = []
            if !at.opened {
                if at.section > 0 { out.append(UInt8(ascii: ",")) }
                out += JSONValue.string(section.table).jsonBytes + Array(":[".utf8)
            }
            for (n, row) in page.rows.enumerated() {
                if at.opened || n > 0 { out.append(UInt8(ascii: ",")) }
                out += ExportSubscriber.json(row, ids: ids).jsonBytes
            }
            if page.rows.count < limit {
                out.append(UInt8(ascii: "]"))
                at = Position(head: nil, section: at.section + 1)
            } else {
                (at.after, at.opened) = (page.last, true)
            }
            position.withLock { $0 = at }
            return out
        }
    }

    /// One stored row as the export shows it: columns as members, stored JSON embedded, secrets
    /// and other people's ids redacted.
    static func json(_ row: PersonalData.Row, ids: Set<Identifier>) -> JSONValue {
        var members: [Identifier: JSONValue] = [:]
        for (column, value) in row {
            let shown: JSONValue
            switch value {
            case nil: shown = .null
            case .int(let n)?: shown = .int(n)
            case .text(let text)?:
                if Self.holdsJSON(column), let parsed = try? JSONValue.parse(Array(text.utf8)) {
                    shown = redact(parsed, ids: ids)
                } else if column.hasSuffix("app_user_id"), !ids.contains(Identifier(text)) {
                    shown = .string(anotherUser)
                } else if column == "event_key", text.hasPrefix("transfer:") {
                    // transfer:<original>:<at>:<to>: the receiving user's id, when someone else's, goes.
                    var parts = text.split(separator: ":", maxSplits: 3, omittingEmptySubsequences: false).map(String.init)
                    if parts.count == 4, !ids.contains(Identifier(parts[3])) { parts[3] = anotherUser }
                    shown = .string(parts.joined(separator: ":"))
                } else {
                    shown = .string(text)
                }
            }
            members[Identifier(column)] = shown
        }
        return .object(members)
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
