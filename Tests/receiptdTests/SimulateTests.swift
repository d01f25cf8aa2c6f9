import Foundation
import ReceiptTesting
import Subprocess
import SystemPackage
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite("receiptd simulate", .serialized)
struct SimulateTests {
    @Test func servesScriptedAnswersAndStopsOnSIGTERM() async throws {
        let outcome = try await Subprocess.run(
            .path(FilePath(binary.path)), arguments: ["simulate", "--port", "0"],
            environment: .custom(["RECEIPTD_APP_STORE_SHARED_SECRET": "s3cret"]), input: .none, output: .sequence,
            error: .discarded
        ) { execution in
            var line = ""
            for try await text in execution.standardOutput.strings() {
                line = text
                break
            }
            try await exchange(line)
            try execution.send(signal: .terminate)
        }
        #expect(outcome.terminationStatus == .exited(0))
    }

    /// The simulator's scripted answers, at the URLs its first line names.
    private func exchange(_ line: String) async throws {
        let production = try #require(line.split(separator: " ").first { $0.hasPrefix("http://") }.map(String.init))
        func post(_ url: String, _ json: String) async throws -> [String: Any] {
            var request = URLRequest(url: URL(string: url)!)
            request.httpMethod = "POST"
            request.httpBody = Data(json.utf8)
            let (data, _) = try await URLSession.shared.data(for: request)
            return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        }
        let sandboxOnly = simulatedReceipt("sandbox_only")
        #expect(try await post(production, #"{"receipt-data":"\#(sandboxOnly)","password":"s3cret"}"#)["status"] as? Int == 21007)
        let sandbox = production.replacingOccurrences(of: "/production/", with: "/sandbox/")
        let valid = try await post(sandbox, #"{"receipt-data":"\#(sandboxOnly)","password":"s3cret"}"#)
        #expect(valid["status"] as? Int == 0)
        #expect(valid["environment"] as? String == "Sandbox")
        #expect(try await post(production, #"{"receipt-data":"\#(sandboxOnly)","password":"wrong"}"#)["status"] as? Int == 21004)
    }
}
