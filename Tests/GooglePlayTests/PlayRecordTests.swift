import JSON
import Testing

@testable import GooglePlay

@Suite("Google Play: a token's reference and the stored envelope")
struct PlayRecordTests {
    @Test func aTokensReferenceIsItsDigestNeverTheToken() {
        let token = "opaque-token-from-google.AO-J1Oz" + String(repeating: "x", count: 120)
        let reference = PurchaseTokenReference.of(token)
        #expect(reference.hasPrefix("GPT.") && reference.utf8.count == 36)
        #expect(!reference.contains("opaque"))
        #expect(reference == PurchaseTokenReference.of(token))
        #expect(reference != PurchaseTokenReference.of(token + "y"))
        // SHA-256("abc") begins ba7816bf8f01cfea414140de5dae2223.
        #expect(PurchaseTokenReference.of("abc") == "GPT.ba7816bf8f01cfea414140de5dae2223")
    }

    @Test func theEnvelopeReadsBackAsWritten() throws {
        let subscription = PlayRecord(
            packageName: "com.example.app", tokenReference: "GPT.1", chain: "GPT.0", seenAt: 1_795_000_000_000,
            periodStart: 1_794_000_000_000, resource: .subscription(try SubscriptionPurchase(PlaySamples.active)))
        let product = PlayRecord(
            packageName: "com.example.app", tokenReference: "GPT.2", chain: "GPT.2", seenAt: 1_795_000_000_001,
            cancelledAt: 1_795_000_000_002, resource: .product(try ProductPurchase(PlaySamples.product)))
        for record in [subscription, product] {
            let bytes = record.json.jsonBytes
            #expect(PlayRecord(json: try JSONValue.parse(bytes)) == record)
        }
        // Google's resource is kept whole, under its own name, beside receiptd's context.
        #expect(subscription.json["subscriptionPurchaseV2"] == PlaySamples.active)
        #expect(subscription.json["google_play"]?["period_start"]?.int64 == 1_794_000_000_000)
        #expect(product.json["google_play"]?["period_start"] == nil)
        #expect(product.json["google_play"]?["cancelled_at"]?.int64 == 1_795_000_000_002)
    }

    @Test func anAppStoreRowOrABrokenEnvelopeIsNotARecord() {
        for text in [
            #"{"transactionId":"1","productId":"p"}"#,
            #"{"google_play":{"package_name":"a","token":"t","chain":"c"},"subscriptionPurchaseV2":{}}"#,
            #"{"google_play":{"package_name":"a","token":"t","chain":"c","seen_at":1},"subscriptionPurchaseV2":{}}"#,
            #"{"google_play":{"package_name":"a","token":"t","chain":"c","seen_at":1}}"#,
        ] {
            #expect(PlayRecord(json: PlaySamples.json(text)) == nil, "\(text)")
        }
    }
}
