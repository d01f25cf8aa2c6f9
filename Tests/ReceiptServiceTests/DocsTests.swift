import Foundation
import ReceiptService
import ReceiptTesting
import Testing

/// README and Docs/ stay true to the repository and to the service: every relative link and
/// anchor resolves, every route of `openapi.yaml` is in Docs/api.md, and Docs/configuration.md
/// lists exactly the keys `receiptd check-config` prints.
@Suite("Documentation")
struct DocsTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    static func text(_ path: String) throws -> String {
        try String(contentsOf: root.appendingPathComponent(path), encoding: .utf8)
    }

    /// README.md and every page under Docs/, as repository paths.
    static func pages() throws -> [String] {
        let docs = try FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent("Docs").path)
        return ["README.md"] + docs.filter { $0.hasSuffix(".md") }.sorted().map { "Docs/" + $0 }
    }

    /// The text outside fenced code blocks and inline code spans: where links are links.
    static func prose(_ markdown: String) -> [String] {
        var lines: [String] = []
        var fenced = false
        for line in markdown.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("```") {
                fenced.toggle()
                continue
            }
            if !fenced { lines.append(String(line).replacing(/`[^`]*`/, with: "")) }
        }
        return lines
    }

    /// GitHub's anchors for a page's headings: lower case, punctuation dropped, spaces as `-`, a
    /// repeated one numbered from `-1`.
    static func anchors(_ markdown: String) -> Set<String> {
        var seen: [String: Int] = [:]
        var anchors: Set<String> = []
        var fenced = false
        for line in markdown.split(separator: "\n") {
            if line.hasPrefix("```") { fenced.toggle() }
            guard !fenced, let match = line.firstMatch(of: /^#{1,6} +(.+?) *$/) else { continue }
            let slug = String(
                String(match.1).lowercased().unicodeScalars.filter {
                    CharacterSet.alphanumerics.contains($0) || $0 == " " || $0 == "-" || $0 == "_"
                }
            ).replacing(" ", with: "-")
            let n = seen[slug, default: 0]
            seen[slug] = n + 1
            anchors.insert(n == 0 ? slug : "\(slug)-\(n)")
        }
        return anchors
    }

    @Test func everyRelativeLinkAndAnchorResolves() throws {
        var broken: [String] = []
        var checked = 0
        for page in try Self.pages() {
            let markdown = try Self.text(page)
            let directory = (page as NSString).deletingLastPathComponent
            for line in Self.prose(markdown) {
                for match in line.matches(of: /\]\(([^)\s]+)\)/) {
                    let target = String(match.1)
                    guard !target.contains("://"), !target.hasPrefix("mailto:") else { continue }
                    checked += 1
                    let parts = target.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
                    let file =
                        parts[0].isEmpty
                        ? page
                        : ((directory as NSString).appendingPathComponent(parts[0]) as NSString)
                            .standardizingPath
                    guard FileManager.default.fileExists(atPath: Self.root.appendingPathComponent(file).path) else {
                        broken.append("\(page): \(target) (no file \(file))")
                        continue
                    }
                    if parts.count == 2, file.hasSuffix(".md"), !Self.anchors(try Self.text(file)).contains(parts[1]) {
                        broken.append("\(page): \(target) (no heading #\(parts[1]) in \(file))")
                    }
                }
            }
        }
        #expect(broken == [], "\(broken.joined(separator: "\n"))")
        #expect(checked > 50)
    }

    /// `METHOD /path` for every operation of `openapi.yaml`.
    static func operations() throws -> [String] {
        var operations: [String] = []
        var path: String?
        for line in try text("openapi.yaml").split(separator: "\n") {
            if let match = line.firstMatch(of: /^  (\/[^:]*):\s*$/) {
                path = String(match.1)
            } else if let match = line.firstMatch(of: /^    (get|put|post|delete|patch):\s*$/), let path {
                operations.append("\(match.1.uppercased()) \(path)")
            } else if !line.hasPrefix(" ") {
                path = nil
            }
        }
        return operations
    }

    @Test func everyRouteOfTheContractIsInTheAPIPage() throws {
        let api = try Self.text("Docs/api.md")
        let operations = try Self.operations()
        #expect(operations.count >= 25)
        #expect(operations.filter { !api.contains("`\($0)`") } == [])
    }

    /// The first cell's keys of every row of Docs/configuration.md's tables: `a.b.c / d` is
    /// `a.b.c` and `a.b.d`.
    static func documentedKeys() throws -> Set<String> {
        var keys: Set<String> = []
        for line in try text("Docs/configuration.md").split(separator: "\n") where line.hasPrefix("| `") {
            let cell = line.dropFirst(2).prefix { $0 != "|" }
            var prefix = ""
            for match in cell.matches(of: /`([^`]+)`/) {
                let token = String(match.1)
                if token.contains(".") {
                    keys.insert(token)
                    prefix = String(token[..<token.lastIndex(of: ".")!]) + "."
                } else {
                    keys.insert(prefix + token)
                }
            }
        }
        return keys
    }

    @Test func theConfigurationPageListsExactlyTheKeysCheckConfigPrints() async throws {
        // Every key that exists is printed once read; an endpoint makes its own keys appear.
        let environment = [
            "RECEIPTD_WEBHOOKS_ENDPOINTS": "crm", "RECEIPTD_WEBHOOKS_CRM_URL": "https://crm.example/hooks",
            "RECEIPTD_WEBHOOKS_CRM_SECRET": "whsec-0123456789abcdef",
            "RECEIPTD_APP_STORE_ACCOUNTS": "client", "RECEIPTD_APP_STORE_ACCOUNT_CLIENT_BUNDLE_IDS": "com.example.app",
        ]
        let (_, loader) = try await ServiceConfiguration.load(
            configDirectory: Self.root.appendingPathComponent("Config").path, environment: environment)
        let printed = Set(
            loader.entries.map {
                $0.key.replacing("webhooks.crm.", with: "webhooks.<name>.").replacing(
                    "appStore.account.client.", with: "appStore.account.<name>.")
            })
        let documented = try Self.documentedKeys()
        #expect(printed.subtracting(documented).sorted() == [], "printed by check-config, missing from configuration.md")
        #expect(documented.subtracting(printed).sorted() == [], "in configuration.md, unknown to check-config")
    }
}
