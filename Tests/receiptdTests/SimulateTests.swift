import CryptoExtras
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

    @Test func servesTheGooglePlayStandInForTheConfiguredServiceAccount() async throws {
        try await withScratchDirectory("receiptd-simulate-play") { dir in
            let key = TestSecrets.googlePlayKey
            let file = dir + "/service-account.json"
            try Data(
                JSONSerialization.data(withJSONObject: [
                    "type": "service_account", "private_key_id": "k1", "private_key": key.pemRepresentation,
                    "client_email": "receiptd@app.iam.gserviceaccount.com", "token_uri": "https://oauth2.googleapis.com/token",
                ])
            ).write(to: URL(fileURLWithPath: file))
            let outcome = try await Subprocess.run(
                .path(FilePath(binary.path)), arguments: ["simulate", "--port", "0", "--google-play-port", "0"],
                environment: .custom(["RECEIPTD_GOOGLE_PLAY_SERVICE_ACCOUNT_KEY_FILE": file]), input: .none,
                output: .sequence, error: .discarded
            ) { execution in
                // Whatever the checks find, the simulator is stopped: the test never waits on it forever.
                defer { try? execution.send(signal: .terminate) }
                var lines: [String] = []
                for try await text in execution.standardOutput.strings() {
                    lines += text.split(separator: "\n").map(String.init)
                    if lines.count >= 2 { break }
                }
                let google = try #require(lines.first { $0.hasPrefix("Google Play simulator") })
                let api = try #require(google.split(separator: " ").first { $0.hasPrefix("googlePlay.apiUrl=") })
                    .dropFirst("googlePlay.apiUrl=".count)
                // The stand-in answers a scripted purchase only to the token its /token grants.
                let request = URLRequest(
                    url: URL(
                        string:
                            "\(api)/androidpublisher/v3/applications/com.example.app/purchases/subscriptionsv2/tokens/gp1.active.cli"
                    )!)
                let (_, refused) = try await URLSession.shared.data(for: request)
                #expect((refused as? HTTPURLResponse)?.statusCode == 401)
                var control = URLRequest(url: URL(string: "\(api)/control/google/purchase")!)
                control.httpMethod = "POST"
                control.httpBody = Data(#"{"scenario":"paused","tag":"cli"}"#.utf8)
                let (bought, _) = try await URLSession.shared.data(for: control)
                #expect(String(decoding: bought, as: UTF8.self).contains("gp1.paused.cli"))
            }
            #expect(outcome.terminationStatus == .exited(0))
        }
    }
}
