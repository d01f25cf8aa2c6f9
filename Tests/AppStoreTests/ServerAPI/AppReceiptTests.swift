import FoundationEssentials
import ReceiptTesting
import Testing

@testable import AppStore

@Suite("App receipt transaction id")
struct AppReceiptTests {
    @Test func theXcodeReceiptWithATransactionGivesZero() throws {
        let receipt = Fixtures.text("AppStoreServerAPI/xcode-app-receipt-with-transaction")
        #expect(try AppReceipt.transactionID(base64: receipt) == "0")
    }

    @Test func theEmptyXcodeReceiptGivesNone() throws {
        let receipt = Fixtures.text("AppStoreServerAPI/xcode-app-receipt-empty")
        #expect(try AppReceipt.transactionID(base64: receipt) == nil)
    }

    @Test(arguments: ["", "not base64!", Data("active_monthly:7".utf8).base64EncodedString(), "MAA="])
    func whatIsNotAPKCS7ReceiptIsUnreadable(_ receipt: String) {
        #expect(throws: AppReceipt.Unreadable.self) { try AppReceipt.transactionID(base64: receipt) }
        #expect(throws: AppReceipt.Unreadable.self) { try AppReceipt.bundleID(base64: receipt) }
    }

    /// The app a receipt names: which account's shared secret goes with it.
    @Test func theBundleIDIsRead() throws {
        for name in ["xcode-app-receipt-empty", "xcode-app-receipt-with-transaction"] {
            let receipt = Fixtures.text("AppStoreServerAPI/" + name)
            #expect(try AppReceipt.bundleID(base64: receipt) == "com.example.naturelab.backyardbirds.example", "\(name)")
        }
    }

    @Test func everyTruncationOfTheReceiptIsRefusedWithoutACrash() throws {
        let bytes = Array(
            try #require(Data(base64Encoded: Fixtures.text("AppStoreServerAPI/xcode-app-receipt-with-transaction"))))
        for length in stride(from: 0, to: bytes.count, by: 7) {
            _ = try? AppReceipt.transactionID(der: Array(bytes[..<length]))
        }
    }
}
