import JSON
import ReceiptTesting
import Testing

@testable import RevenueCatProtocol

@Suite("SDK errors")
struct SDKErrorTests {
    @Test func anErrorIsTheCodeAndMessageAtTheTopLevel() {
        #expect(
            String(decoding: SDKError.invalidAPIKey.json.jsonBytes, as: UTF8.self)
                == #"{"code":7225,"message":"Invalid API key."}"#)
        #expect(SDKConformance.error(SDKError.invalidAPIKey.json, contentType: "application/json") == [])
        let attributes = SDKError.invalidAttributes([.init(key: "$email", message: "Email address is not a valid email.")])
        #expect(
            String(decoding: attributes.json.jsonBytes, as: UTF8.self)
                == #"{"attribute_errors":[{"key_name":"$email","message":"Email address is not a valid email."}],"code":7263,"message":"Some subscriber attributes keys were unable to be saved."}"#
        )
    }

    /// A 4xx to a purchase finishes the store transaction for good: only what no retry could
    /// change is one.
    @Test func whatARetryMayFixIsA5xx() {
        #expect(SDKError.storeProblem("Apple did not answer.").status == 503)
        #expect(SDKError.internalFault.status == 500)
        #expect(SDKError.invalidReceipt("no").status == 400 && SDKError.cannotTransfer("no").status == 400)
    }
}
