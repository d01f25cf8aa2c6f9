import Configuration
import Foundation
import ReceiptTesting
import Testing

@testable import ReceiptCore
@testable import ReceiptService

@Suite("JSON config snapshot")
struct JSONConfigSnapshotTests {
    private func snapshot(_ text: String) throws -> JSONConfigSnapshot {
        let bytes = Array(text.utf8)
        return try JSONConfigSnapshot(data: bytes.span.bytes, providerName: "test.json", parsingOptions: .default)
    }

    private func content(_ s: JSONConfigSnapshot, _ key: String, _ type: ConfigType) throws -> ConfigContent? {
        try s.value(forKey: AbsoluteConfigKey(key.split(separator: ".").map(String.init)), type: type).value?.content
    }

    @Test func nestedObjectsBecomeDottedKeys() throws {
        let s = try snapshot(#"{"http": {"port": 8080, "limits": {"maxHeaderBytes": 100}}, "log": {"level": "debug"}}"#)
        #expect(try content(s, "http.port", .int) == .int(8080))
        #expect(try content(s, "http.limits.maxHeaderBytes", .int) == .int(100))
        #expect(try content(s, "log.level", .string) == .string("debug"))
        #expect(try content(s, "http.missing", .int) == nil)
        #expect(try content(s, "http", .string) == nil)
    }

    @Test func scalarsKeepTheirJSONType() throws {
        let s = try snapshot(#"{"n": 1, "b": true, "s": "1", "d": 1.5}"#)
        #expect(throws: JSONConfigSnapshot.TypeMismatch.self) { try content(s, "n", .string) }
        #expect(throws: JSONConfigSnapshot.TypeMismatch.self) { try content(s, "n", .bool) }
        #expect(throws: JSONConfigSnapshot.TypeMismatch.self) { try content(s, "b", .int) }
        #expect(throws: JSONConfigSnapshot.TypeMismatch.self) { try content(s, "s", .int) }
        #expect(throws: JSONConfigSnapshot.TypeMismatch.self) { try content(s, "d", .int) }
        #expect(try content(s, "b", .bool) == .bool(true))
        #expect(try content(s, "d", .double) == .double(1.5))
        #expect(try content(s, "n", .double) == .double(1))
    }

    @Test func arraysOfOneScalarType() throws {
        let s = try snapshot(#"{"names": ["a", "b"], "ports": [1, 2], "mixed": [1, "a"], "empty": []}"#)
        #expect(try content(s, "names", .stringArray) == .stringArray(["a", "b"]))
        #expect(try content(s, "ports", .intArray) == .intArray([1, 2]))
        #expect(try content(s, "ports", .doubleArray) == .doubleArray([1, 2]))
        #expect(try content(s, "empty", .stringArray) == .stringArray([]))
        #expect(throws: JSONConfigSnapshot.TypeMismatch.self) { try content(s, "mixed", .intArray) }
        #expect(throws: JSONConfigSnapshot.TypeMismatch.self) { try content(s, "names", .string) }
    }

    @Test func nullIsAbsentAndBytesAreBase64() throws {
        let s = try snapshot(#"{"gone": null, "raw": "AAEC"}"#)
        #expect(try content(s, "gone", .string) == nil)
        #expect(try content(s, "raw", .bytes) == .bytes([0, 1, 2]))
    }

    @Test(arguments: [
        "not json",
        "[1, 2]",
        #""text""#,
        #"{"a": [{"b": 1}]}"#,
        #"{"a": [[1]]}"#,
        #"{"a": 1"#,
    ])
    func invalidFilesAreRefused(text: String) {
        #expect(throws: JSONConfigSnapshot.InvalidFile.self) { try snapshot(text) }
    }

    @Test func aMalformedConfigFileStopsLoadingAndNamesTheFile() async throws {
        let dir = try makeConfigDirectory(["default.json": #"{"http": {"port": 80,}"#])
        defer { try? FileManager.default.removeItem(atPath: dir) }
        await #expect {
            _ = try await ServiceConfiguration.load(configDirectory: dir, environment: [:])
        } throws: { error in
            "\(error)".contains("default.json")
        }
    }
}
