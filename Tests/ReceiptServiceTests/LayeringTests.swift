import Foundation
import Testing

/// The edge maps HTTP to the use cases and nothing else: only the composition root
/// (`Sources/ReceiptService/Composition/`: the Application and its configuration) sees Storage,
/// so a route can never reach past ReceiptCore into the database (Docs/architecture.md).
@Suite("Layering")
struct LayeringTests {
    static let edge = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Sources/ReceiptService")

    @Test func onlyTheCompositionRootImportsStorage() throws {
        let files = try FileManager.default.subpathsOfDirectory(atPath: Self.edge.path).filter {
            $0.hasSuffix(".swift")
        }
        #expect(files.count > 15)
        var crossing: [String] = []
        for file in files where !file.hasPrefix("Composition/") {
            let text = try String(contentsOf: Self.edge.appendingPathComponent(file), encoding: .utf8)
            if text.split(separator: "\n").contains(where: {
                $0.contains(/^(@testable |@_exported )?import (Storage|CSQLite|CPostgreSQL)\b/)
            }) {
                crossing.append(file)
            }
        }
        #expect(crossing == [], "files of the edge importing Storage: \(crossing)")
        // The composition root does see it (the test would pass vacuously were the folder renamed).
        let root = try String(contentsOf: Self.edge.appendingPathComponent("Composition/Application.swift"), encoding: .utf8)
        #expect(root.contains("import Storage"))
    }
}
