import FoundationEssentials
import JSON
import Testing

@testable import Retention

@Suite("Retention: Apple's RealtimeResponseBody, byte by byte")
struct RealtimeResponseTests {
    static let id = UUID(uuidString: "3F2A7C1E-8B4D-4E6F-9A0B-1C2D3E4F5A6B")!

    static func text(_ value: JSONValue) -> String { String(decoding: value.jsonBytes, as: UTF8.self) }

    @Test func eachAnswerIsOneMemberWithItsMessage() {
        #expect(Self.text(RealtimeResponse.body(nil)) == "{}")
        #expect(
            Self.text(RealtimeResponse.body(.message(Self.id)))
                == #"{"message":{"messageIdentifier":"3f2a7c1e-8b4d-4e6f-9a0b-1c2d3e4f5a6b"}}"#)
        #expect(
            Self.text(RealtimeResponse.body(.alternateProduct(message: Self.id, productID: "monthly_lite")))
                == #"{"alternateProduct":{"messageIdentifier":"3f2a7c1e-8b4d-4e6f-9a0b-1c2d3e4f5a6b","productId":"monthly_lite"}}"#
        )
        let offer = RetentionAnswer.promotionalOffer(message: Self.id, offerID: "LOYAL20", productID: nil, format: .jws)
        #expect(
            Self.text(RealtimeResponse.body(offer, signature: .jws("h.p.s")))
                == #"{"promotionalOffer":{"messageIdentifier":"3f2a7c1e-8b4d-4e6f-9a0b-1c2d3e4f5a6b","promotionalOfferSignatureV2":"h.p.s"}}"#
        )
        let v1 = RealtimeResponse.OfferSignature.v1(
            encodedSignature: "MEUC", productID: "monthly", offerID: "LOYAL20", nonce: "n-1", timestamp: 1_795_000_000_000,
            keyID: "KEY1", appAccountToken: nil)
        #expect(
            Self.text(RealtimeResponse.body(offer, signature: v1))
                == #"{"promotionalOffer":{"messageIdentifier":"3f2a7c1e-8b4d-4e6f-9a0b-1c2d3e4f5a6b","promotionalOfferSignatureV1":{"encodedSignature":"MEUC","keyId":"KEY1","nonce":"n-1","offerIdentifier":"LOYAL20","productId":"monthly","timestamp":1795000000000}}}"#
        )
    }
}
