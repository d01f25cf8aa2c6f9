import Foundation
import Testing

/// The edge maps HTTP to the use cases and nothing else: only the composition root
/// (`Sources/ReceiptService/Composition/`: the Application and its configuration) sees Storage,
/// so a route can never reach past the use cases into the database (Docs/architecture.md): the use
/// cases answer with result types of their own.
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
                $0.contains(
                    /^(@testable |@_exported |public |package |internal )?import (Storage|DatabaseEngine|CSQLite|CPostgreSQL)\b/)
            }) {
                crossing.append(file)
            }
        }
        // The use cases answer with result types of their own, which the resources render.
        #expect(crossing == [], "files of the edge importing Storage: \(crossing)")
        // The composition root does see it (the test would pass vacuously were the folder renamed).
        let root = try String(contentsOf: Self.edge.appendingPathComponent("Composition/Application.swift"), encoding: .utf8)
        #expect(root.contains("import Storage"))
    }
}

/// The package's own edges, as Docs/architecture.md "Targets" draws them: for each target, the
/// targets of this package its `import` lines may name. A new target, or a new edge, is declared
/// here first; an undeclared one fails this test. (Third-party and system modules are not
/// listed: Package.swift holds those.)
extension LayeringTests {
    static let allowedImports: [String: Set<String>] = [
        // The base: no store, no storage, no HTTP.
        "Identifiers": [], "Clocks": [], "Resilience": [], "JSON": ["Identifiers"],
        "CCurl": [], "CLinux": [], "CPostgreSQL": [], "CSQLite": [], "CZlib": [],
        "CurlTransport": ["CCurl"],
        "Workers": ["Clocks"],
        "Gzip": ["CZlib"],
        "HTTPServer": ["CLinux", "JSON"],
        // Facts and what is computed from them: pure.
        "Entitlements": ["Identifiers"],
        "Analytics": ["Entitlements", "Identifiers"],
        "Offers": ["Entitlements", "Identifiers", "JSON"],
        "Retention": ["Analytics", "Entitlements", "Identifiers", "JSON"],
        "RevenueCatProtocol": ["Entitlements", "Identifiers", "JSON"],
        // The stores, one target each: wire models, client, and what their answers state as facts.
        "AppStore": ["Clocks", "CurlTransport", "Entitlements", "Identifiers", "JSON", "Resilience"],
        "GooglePlay": ["Clocks", "CurlTransport", "Entitlements", "Identifiers", "JSON"],
        // The database engine: connections, the queue, migrations, the change log; no table of ours.
        "DatabaseEngine": ["CLinux", "CPostgreSQL", "CSQLite"],
        // Storage keeps facts and rollups, over the engine.
        "Storage": ["Analytics", "CSQLite", "DatabaseEngine", "Entitlements", "Gzip", "Identifiers", "JSON"],
        // Webhooks: written in a save's transaction, delivered by their dispatcher.
        "Webhooks": ["Clocks", "CurlTransport", "Entitlements", "Identifiers", "JSON", "DatabaseEngine", "Storage", "Workers"],
        // The use cases: everything below, nothing of HTTP.
        "ReceiptCore": [
            "Analytics", "AppStore", "Clocks", "CurlTransport", "Entitlements", "GooglePlay", "Gzip", "Identifiers", "JSON",
            "Offers", "Resilience", "Retention", "DatabaseEngine", "Storage", "Webhooks", "Workers",
        ],
        // The use cases' other rooms, each over the kernel's context; none imports the edge.
        "StoreCalls": [
            "AppStore", "Clocks", "Entitlements", "GooglePlay", "Identifiers", "JSON", "ReceiptCore", "DatabaseEngine", "Storage",
            "Workers",
        ],
        "Notifications": [
            "AppStore", "Clocks", "Entitlements", "GooglePlay", "Identifiers", "JSON", "ReceiptCore", "DatabaseEngine", "Storage",
            "StoreCalls",
            "Workers",
        ],
        "Charts": [
            "Analytics", "AppStore", "Clocks", "Entitlements", "Identifiers", "ReceiptCore", "Resilience", "DatabaseEngine",
            "Storage", "Workers",
        ],
        "Operations": [
            "Analytics", "Clocks", "Entitlements", "Gzip", "Identifiers", "JSON", "ReceiptCore", "DatabaseEngine",
            "Storage", "Webhooks",
            "Workers",
        ],
        "CustomerOffers": [
            "AppStore", "Clocks", "Entitlements", "Identifiers", "JSON", "Offers", "ReceiptCore", "Retention", "DatabaseEngine",
            "Storage",
        ],
        // The edge (only its Composition/ sees Storage: the test above).
        "ReceiptService": [
            "Analytics", "AppStore", "CCurl", "Charts", "Clocks", "CurlTransport", "CustomerOffers", "Entitlements",
            "GooglePlay", "HTTPServer", "Identifiers", "JSON", "Notifications", "Offers", "Operations", "ReceiptCore",
            "Resilience", "Retention", "RevenueCatProtocol", "DatabaseEngine", "Storage", "StoreCalls", "Webhooks", "Workers",
        ],
        // Tools: the simulators, the webhook sink, the test harness, the executables.
        "AppStoreSimulator": ["AppStore", "Clocks", "HTTPServer", "JSON"],
        "GooglePlaySimulator": ["Clocks", "Entitlements", "GooglePlay", "HTTPServer", "JSON"],
        "WebhookSink": ["Clocks", "Entitlements", "HTTPServer", "JSON", "Webhooks"],
        "ReceiptTesting": [
            "Analytics", "AppStore", "AppStoreSimulator", "Charts", "Clocks", "CustomerOffers", "Entitlements",
            "GooglePlaySimulator", "HTTPServer", "Identifiers", "JSON", "Notifications", "Operations", "ReceiptCore",
            "ReceiptService", "Resilience", "DatabaseEngine", "Storage", "StoreCalls", "Webhooks", "Workers",
        ],
        "http-inspect": ["HTTPServer", "JSON"],
        "receiptd": [
            "AppStore", "AppStoreSimulator", "Charts", "Clocks", "CustomerOffers", "GooglePlay", "GooglePlaySimulator",
            "HTTPServer", "JSON", "Notifications", "Operations", "ReceiptCore", "ReceiptService", "DatabaseEngine", "Storage",
            "StoreCalls", "Webhooks", "WebhookSink",
        ],
    ]

    static let sources = edge.deletingLastPathComponent()

    /// The use cases' targets beside the kernel (ReceiptCore).
    static let useCaseRooms: Set<String> = ["Charts", "CustomerOffers", "Notifications", "Operations", "StoreCalls"]

    /// The package's targets this target's files import.
    static func imports(of target: String, among targets: Set<String>) throws -> Set<String> {
        let folder = sources.appendingPathComponent(target)
        var found: Set<String> = []
        for file in try FileManager.default.subpathsOfDirectory(atPath: folder.path) where file.hasSuffix(".swift") {
            let text = try String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8)
            for line in text.split(separator: "\n") {
                guard
                    let match = line.firstMatch(
                        of: /^\s*(?:@\w+\s+)*(?:public |package |internal |private |fileprivate )?import\s+(?:\w+\s+)?(\w+)/)
                else { continue }
                let module = String(match.1)
                if targets.contains(module) { found.insert(module) }
            }
        }
        return found
    }

    @Test func everyTargetImportsOnlyWhatTheMapAllows() throws {
        let targets = Set(
            try FileManager.default.contentsOfDirectory(atPath: Self.sources.path).filter {
                var folder: ObjCBool = false
                return FileManager.default.fileExists(atPath: Self.sources.appendingPathComponent($0).path, isDirectory: &folder)
                    && folder.boolValue
            })
        #expect(targets.count > 25)
        #expect(targets == Set(Self.allowedImports.keys), "targets missing from the map, or gone")
        for target in targets.sorted() {
            let undeclared = try Self.imports(of: target, among: targets).subtracting(Self.allowedImports[target] ?? [])
            #expect(undeclared.isEmpty, "\(target) imports \(undeclared.sorted()), which the map does not allow")
        }
        // The map is read as it is meant: a store never imports another, and nothing below the
        // use cases imports them.
        #expect(Self.allowedImports["GooglePlay"]?.contains("AppStore") == false)
        #expect(Self.allowedImports["AppStore"]?.contains("GooglePlay") == false)
        // A store states facts; keeping them is Storage's job, and no store reaches it.
        for store in ["AppStore", "GooglePlay"] {
            #expect(Self.allowedImports[store]?.isDisjoint(with: ["Storage", "DatabaseEngine"]) == true)
        }
        // The engine knows no store of ours.
        #expect(Self.allowedImports["DatabaseEngine"]?.contains("Storage") == false)
        for base in [
            "Entitlements", "Analytics", "Storage", "AppStore", "GooglePlay", "HTTPServer", "Webhooks", "Workers", "Gzip",
        ] {
            #expect(Self.allowedImports[base]?.isDisjoint(with: ["ReceiptCore", "ReceiptService"]) == true)
        }
    }

    @Test func theMapCatchesAnImportItDoesNotAllow() throws {
        // The scan itself: it finds what this very file's target would see.
        let found = try Self.imports(of: "WebhookSink", among: ["Webhooks", "HTTPServer", "Storage"])
        #expect(found == ["Webhooks", "HTTPServer"])
        #expect(!(Self.allowedImports["WebhookSink"] ?? []).contains("Storage"))
    }
}

extension LayeringTests {
    /// A file past 500 lines holds more than one thing to read at once: split it by what it does.
    @Test func noSourceFileIsLongerThan500Lines() throws {
        var long: [String] = []
        let files = try FileManager.default.subpathsOfDirectory(atPath: Self.sources.path).filter { $0.hasSuffix(".swift") }
        #expect(files.count > 200)
        for file in files {
            let text = try String(contentsOf: Self.sources.appendingPathComponent(file), encoding: .utf8)
            let lines = text.split(separator: "\n", omittingEmptySubsequences: false).count - (text.hasSuffix("\n") ? 1 : 0)
            if lines > 500 { long.append("\(file): \(lines)") }
        }
        #expect(long == [], "files over 500 lines: \(long)")
    }
}
