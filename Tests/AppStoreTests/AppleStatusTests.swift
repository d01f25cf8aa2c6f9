import Entitlements
import Testing

@testable import AppStore

@Suite("Apple status")
struct AppleStatusTests {
    @Test(arguments: [
        (0, AppleStatus.Disposition.valid), (21006, .valid),
        (21007, .switchEnvironment(.sandbox)), (21008, .switchEnvironment(.production)),
        (21002, .retryable), (21005, .retryable), (21009, .retryable),
        (21100, .retryableIfFlagged), (21150, .retryableIfFlagged), (21199, .retryableIfFlagged),
        (21003, .invalidReceipt), (21010, .invalidReceipt), (21004, .misconfigured),
        (21000, .unexpected), (21001, .unexpected), (21200, .unexpected), (-1, .unexpected),
    ])
    func everyDocumentedStatusHasItsDisposition(code: Int, disposition: AppleStatus.Disposition) {
        #expect(AppleStatus(rawValue: code).disposition == disposition)
    }
}
