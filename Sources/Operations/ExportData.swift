import Analytics
package import DatabaseEngine
import Entitlements
import Foundation
import FoundationEssentials
import Gzip
import JSON
import ReceiptCore
import Storage

/// `receiptd export-data --since DATE DIR`: transactions (with money), events and subscribers as
/// gzip NDJSON or CSV, one file per table and UTC day a row was last written
/// (`DIR/transactions/2026-11-24.ndjson.gz`), and `DIR/schema.json` naming each table's columns,
/// types and key (Docs/export.md). A day's file is written whole under a temporary name and then
/// renamed over any earlier export of that day, so a warehouse never reads half a file and an
/// export run again replaces what it wrote before.
package struct ExportData {
    package enum Format: String, Sendable, CaseIterable {
        case ndjson
        case csv
    }

    /// Why an export stopped: a file could not be written, or the database read failed.
    package struct Failure: Error, Sendable, Equatable, CustomStringConvertible {
        package var description: String
        init(_ description: String) { self.description = description }
    }

    /// A step of writing a gzip file, its failure said as the export's.
    private static func gzip<T>(_ step: () throws -> T) throws(Failure) -> T {
        do { return try step() } catch { throw Failure("\(error)") }
    }

    package struct TableSummary: Sendable, Equatable {
        package var rows = 0
        package var files = 0
    }

    private let database: Database
    /// Rows read from the database at a time.
    private let page: Int

    package init(database: Database, page: Int = 5_000) {
        self.database = database
        self.page = page
    }

    /// Rows written in [`since`, `until`) (epoch ms) into `directory`, created when missing.
    package func callAsFunction(
        since: Int64, until: Int64, format: Format, into directory: String
    ) throws(Failure) -> [String: TableSummary] {
        let files = FileManager.default
        for table in ExportStore.tables {
            do {
                try files.createDirectory(atPath: directory + "/" + table.name, withIntermediateDirectories: true)
            } catch {
                throw Failure("cannot create \(directory)/\(table.name)")
            }
        }
        guard files.createFile(atPath: directory + "/schema.json", contents: Data(Self.schema(format).jsonBytes)) else {
            throw Failure("cannot write \(directory)/schema.json")
        }
        var summary: [String: TableSummary] = [:]
        for table in ExportStore.tables {
            summary[table.name] = try export(table, since: since, until: until, format: format, into: directory)
        }
        return summary
    }

    private func export(
        _ table: ExportStore.Table, since: Int64, until: Int64, format: Format, into directory: String
    ) throws(Failure) -> TableSummary {
        var summary = TableSummary()
        var open: (day: Int64, file: GzipFile)?
        var cursor: ExportStore.Cursor?
        func finish() throws(Failure) {
            guard let (_, file) = open else { return }
            open = nil
            try Self.gzip { try file.close() }
            let final = String(file.path.dropLast(".partial".count))
            do {
                if FileManager.default.fileExists(atPath: final) { try FileManager.default.removeItem(atPath: final) }
                try FileManager.default.moveItem(atPath: file.path, toPath: final)
            } catch {
                throw Failure("cannot rename \(file.path)")
            }
            summary.files += 1
        }
        repeat {
            let rows: [(written: Int64, values: [ExportStore.Value])]
            do {
                rows = try ExportStore(database).page(table, since: since, until: until, after: cursor, limit: page)
            } catch {
                throw Failure("cannot read \(table.name): \(error)")
            }
            guard let last = rows.last else { break }
            cursor = ExportStore.Cursor(written: last.written, key: last.values[table.columns.firstIndex(of: table.key)!])
            var buffer: [UInt8] = []
            for row in rows {
                let day = CivilTime.split(row.written).0
                if open?.day != day {
                    if let file = open?.file { try Self.gzip { try file.write(buffer) } }
                    buffer.removeAll(keepingCapacity: true)
                    try finish()
                    let (y, m, d) = CivilTime.date(fromDays: day)
                    let path = "\(directory)/\(table.name)/\(PeriodGrid.label(y, m, d)).\(format.rawValue).gz.partial"
                    open = (day, try Self.gzip { try GzipFile(path: path) })
                    if format == .csv { buffer += Self.csvHeader(table) }
                }
                buffer += format == .csv ? Self.csvLine(row.values) : Self.jsonLine(table, row.values)
                summary.rows += 1
            }
            if let file = open?.file { try Self.gzip { try file.write(buffer) } }
        } while true
        try finish()
        return summary
    }

    /// `{"column": value, …}` in the table's column order, then a line feed.
    static func jsonLine(_ table: ExportStore.Table, _ values: [ExportStore.Value]) -> [UInt8] {
        var line: [UInt8] = [UInt8(ascii: "{")]
        for (i, column) in table.columns.enumerated() {
            if i > 0 { line.append(UInt8(ascii: ",")) }
            line += JSONValue.string(column.name).jsonBytes
            line.append(UInt8(ascii: ":"))
            switch values[i] {
            case .integer(let n): line += Array(String(n).utf8)
            case .text(let s): line += JSONValue.string(s).jsonBytes
            case .null: line += Array("null".utf8)
            }
        }
        line += [UInt8(ascii: "}"), UInt8(ascii: "\n")]
        return line
    }

    static func csvHeader(_ table: ExportStore.Table) -> [UInt8] {
        Array((table.columns.map(\.name).joined(separator: ",") + "\r\n").utf8)
    }

    /// RFC 4180: a field with a comma, quote or line break is quoted, quotes doubled; null is an
    /// empty field, and an empty text a quoted one (`""`), so a loader can tell them apart.
    static func csvLine(_ values: [ExportStore.Value]) -> [UInt8] {
        let fields = values.map { value -> String in
            switch value {
            case .integer(let n): return String(n)
            case .null: return ""
            case .text(let s):
                guard s.isEmpty || s.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) else { return s }
                return "\"" + s.replacingOccurrences(of: "\"", with: "\"\"") + "\""
            }
        }
        return Array((fields.joined(separator: ",") + "\r\n").utf8)
    }

    /// `schema.json`: each table's file layout, key, the column that places a row in a day, and
    /// its columns with their types.
    static func schema(_ format: Format) -> JSONValue {
        var tables: [Identifier: JSONValue] = [:]
        for table in ExportStore.tables {
            tables[Identifier(table.name)] = .object([
                "files": .string("\(table.name)/YYYY-MM-DD.\(format.rawValue).gz"),
                "key": .string(table.key.name),
                "day_of": .string(String(table.written.dropFirst(2))),
                "columns": .array(
                    table.columns.map { .object(["name": .string($0.name), "type": .string($0.kind.rawValue)]) }),
            ])
        }
        return .object(["format": .string(format.rawValue), "version": .int(1), "tables": .object(tables)])
    }
}
