import Foundation
import JSON
import ReceiptTesting
import Testing

@testable import AppStore

/// JSONParser on Apple's own bytes: it reads the realistic capture as JSONDecoder does.
@Suite struct VerifyReceiptCaptureParsingTests {
    @Test func theRealisticCaptureParsesAsJSONDecoderReadsIt() throws {
        let url = Fixtures.url("AppStore/verify-receipt-response.json")
        let bytes = try Data(contentsOf: url)
        #expect(try JSONValue.parse(Array(bytes)) == (try JSONDecoder().decode(JSONValue.self, from: bytes)))
    }
}
