import Foundation
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite("receiptd simulate", .serialized)
struct SimulateTests {
    private var binary: URL {
        URL(fileURLWithPath: Bundle.main.executablePath ?? CommandLine.arguments[0]).deletingLastPathComponent()
            .appendingPathComponent("receiptd")
    }

    @Test func servesScriptedAnswersAndStopsOnSIGTERM() async throws {
        let process = Process()
        process.executableURL = binary
        process.arguments = ["simulate", "--port", "0"]
        process.environment = ["RECEIPTD_APP_STORE_SHARED_SECRET": "s3cret"]
        let out = Pipe()
        process.standardOutput = out
        try process.run()
        let line: String = await onOwnThread {
            var data = Data()
            while !data.contains(0x0A) {
                let chunk = out.fileHandleForReading.availableData
                if chunk.isEmpty { break }
                data.append(chunk)
            }
            return String(decoding: data, as: UTF8.self)
        }
        let production = try #require(line.split(separator: " ").first { $0.hasPrefix("http://") }.map(String.init))
        func post(_ url: String, _ json: String) async throws -> [String: Any] {
            var request = URLRequest(url: URL(string: url)!)
            request.httpMethod = "POST"
            request.httpBody = Data(json.utf8)
            let (data, _) = try await URLSession.shared.data(for: request)
            return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        }
        let sandboxOnly = Data("sandbox_only".utf8).base64EncodedString()
        #expect(try await post(production, #"{"receipt-data":"\#(sandboxOnly)","password":"s3cret"}"#)["status"] as? Int == 21007)
        let sandbox = production.replacingOccurrences(of: "/production/", with: "/sandbox/")
        let valid = try await post(sandbox, #"{"receipt-data":"\#(sandboxOnly)","password":"s3cret"}"#)
        #expect(valid["status"] as? Int == 0)
        #expect(valid["environment"] as? String == "Sandbox")
        #expect(try await post(production, #"{"receipt-data":"\#(sandboxOnly)","password":"wrong"}"#)["status"] as? Int == 21004)
        kill(process.processIdentifier, SIGTERM)
        await onOwnThread { process.waitUntilExit() }
        #expect(process.terminationStatus == 0)
    }
}
