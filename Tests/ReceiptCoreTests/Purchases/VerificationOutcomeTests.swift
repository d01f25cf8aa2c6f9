import Entitlements
import Testing

@testable import ReceiptCore

@Suite("Verification outcomes")
struct VerificationOutcomeTests {
    /// The words of the verification log and the statistics: a renamed constant must not change them.
    @Test func theLoggedWordsStayAsTheyWere() {
        let words: [VerificationOutcome] = [
            .valid, .invalidReceipt, .misconfigured, .unexpected, .unavailable, .serverAPI, .signedTransaction,
            .noTransactions, .googlePlay, .googlePlayRefused,
        ]
        #expect(
            words.map(\.rawValue) == [
                "valid", "invalid_receipt", "misconfigured", "unexpected", "unavailable", "server_api", "signed_transaction",
                "no_transactions", "google_play", "google_play_refused",
            ])
        #expect(VerificationOutcome.failed(.serverAPI, "unavailable").rawValue == "server_api_unavailable")
        #expect(VerificationOutcome.failed(.googlePlay, "forbidden").rawValue == "google_play_forbidden")
        #expect(VerificationOutcome.stated(by: .playStore).rawValue == "play_store")
        #expect(VerificationOutcome.refused(.notStored).rawValue == ReceiptError.notStored.code)
    }
}
