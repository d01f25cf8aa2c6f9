import HTTPServer
import Identifiers
import JSON
import Operations
import ReceiptCore
import Synchronization

extension Responses {
    /// The export's document format (Docs/privacy.md).
    static let exportFormat = "receiptd-export/1"

    /// GET /v1/subscribers/{id}/export: one JSON document, streamed a part at a time (the head,
    /// then each page of rows, then the end), so a long history never sits in memory whole:
    /// `{"aliases", "app_user_id", "exported_at", "format", "subscriber" (explained), "tables":
    /// {table: [row, …], …}}`.
    static func export(_ export: ExportSubscriber.Export) -> HTTPResponse {
        let writer = ExportWriter()
        let head = JSONValue.object([
            "format": .string(exportFormat), "app_user_id": .string(export.appUserID),
            "aliases": .array(export.aliases.map(JSONValue.string)),
            "exported_at": SubscriberDocument.time(export.exportedAt),
            "subscriber": export.subscriber.map {
                $0.document.rendered(version: $0.version, now: export.exportedAt, explain: true)
            } ?? .null,
        ]).jsonBytes.dropLast()  // `}`: the tables follow
        let pages = export.pages
        return HTTPResponse(
            status: .ok, headers: ["Content-Type": "application/json", "Cache-Control": "no-store"],
            stream: HTTPBodyStream { try await writer.next(head: Array(head) + #","tables":{"#.utf8, pages) })
    }
}

/// Where a streamed export is: whether the head, a table and the end have been written.
private final class ExportWriter: Sendable {
    private struct Written {
        var head = false
        var tables = 0
        var end = false
    }
    private let written = Mutex(Written())

    /// The next part of the document, nil after its end.
    func next(head: [UInt8], _ pages: @Sendable () async throws -> ExportSubscriber.Page?) async throws -> [UInt8]? {
        let at = written.withLock { $0 }
        guard at.head else {
            written.withLock { $0.head = true }
            return head
        }
        guard !at.end else { return nil }
        guard let page = try await pages() else {
            written.withLock { $0.end = true }
            return Array("}}".utf8)
        }
        var out: [UInt8] = []
        if page.isFirst {
            if at.tables > 0 { out.append(UInt8(ascii: ",")) }
            out += JSONValue.string(page.table).jsonBytes + Array(":[".utf8)
            written.withLock { $0.tables += 1 }
        }
        for (n, row) in page.rows.enumerated() {
            if !page.isFirst || n > 0 { out.append(UInt8(ascii: ",")) }
            out += Self.json(row).jsonBytes
        }
        if page.isLast { out.append(UInt8(ascii: "]")) }
        return out
    }

    /// A row as a JSON object, one member per column.
    private static func json(_ row: ExportSubscriber.Row) -> JSONValue {
        var members: [Identifier: JSONValue] = [:]
        for (column, value) in row {
            members[Identifier(column)] =
                switch value {
                case .null: .null
                case .int(let n): .int(n)
                case .text(let text): .string(text)
                case .json(let json): json
                }
        }
        return .object(members)
    }
}
