import Identifiers
import JSON
import Testing

@testable import ReceiptCore

@Suite("What an app's answer may name")
struct PurchaseIdentifiersTests {
    static let document = try! JSONValue.parse(
        Array(
            #"""
            {"app_user_id":"vic","subscriptions":{"monthly":{"original_transaction_id":"1000000001","store_transaction_id":"1000000009",
            "explanation":{"decision":"Entitled: the current period (transaction 1000000009) expires soon.",
            "facts":{"transaction_id":"1000000009"}}}},
            "non_subscriptions":{"lifetime":[{"transaction_id":"2000000001","app_transaction_id":"777"}]}}
            """#.utf8))

    @Test func everyIdentifierAtAnyDepthIsFound() {
        #expect(
            PurchaseIdentifiers.all(in: Self.document) == ["1000000001", "1000000009", "2000000001", "777"])
    }

    /// A proof naming one identifier of a purchase shows that purchase whole.
    @Test func aProvenPurchaseIsShownWhole() {
        #expect(
            PurchaseIdentifiers.widened(["1000000009"], in: Self.document) == [
                "1000000001", "1000000009",
            ])
        #expect(PurchaseIdentifiers.widened(["2000000001"], in: Self.document) == ["2000000001", "777"])
    }

    @Test func whatWasNotProvedIsNullAndHiddenInWords() {
        let shown = PurchaseIdentifiers.redacted(Self.document, keeping: ["2000000001", "777"])
        let monthly = shown["subscriptions"]?["monthly"]
        #expect(monthly?["original_transaction_id"] == .null && monthly?["store_transaction_id"] == .null)
        #expect(monthly?["explanation"]?["facts"]?["transaction_id"] == .null)
        #expect(
            monthly?["explanation"]?["decision"]?.string == "Entitled: the current period (transaction (hidden)) expires soon.")
        #expect(shown["non_subscriptions"]?["lifetime"]?.array?.first?["transaction_id"]?.string == "2000000001")
        #expect(shown["app_user_id"]?.string == "vic")
        // Everything proved: unchanged, byte for byte.
        #expect(PurchaseIdentifiers.redacted(Self.document, keeping: PurchaseIdentifiers.all(in: Self.document)) == Self.document)
    }

    /// Ids are their bytes: proving one spelling of an id (é composed) neither shows the purchase
    /// named by another (e and U+0301) nor keeps its name in words; `String` holds the two equal.
    @Test func provingOneSpellingOfAnIdShowsNoOther() throws {
        let (nfc, nfd) = ("o\u{E9}", "oe\u{301}")
        let document = try JSONValue.parse(
            Array(
                """
                {"subscriptions":{"a":{"original_transaction_id":"\(nfc)","explanation":{"decision":"paid (\(nfc))"}},
                "b":{"original_transaction_id":"\(nfd)","explanation":{"decision":"paid (\(nfd))"}}}}
                """.utf8))
        #expect(PurchaseIdentifiers.all(in: document).count == 2)
        let proof: Set<Identifier> = [Identifier(nfc)]
        #expect(PurchaseIdentifiers.widened(proof, in: document) == proof)
        let shown = PurchaseIdentifiers.redacted(document, keeping: proof)
        let (a, b) = (shown["subscriptions"]?["a"], shown["subscriptions"]?["b"])
        #expect(a?["original_transaction_id"]?.string.map { Array($0.utf8) } == Array(nfc.utf8))
        #expect(a?["explanation"]?["decision"]?.string.map { Array($0.utf8) } == Array("paid (\(nfc))".utf8))
        #expect(b?["original_transaction_id"] == .null)
        #expect(b?["explanation"]?["decision"]?.string == "paid ((hidden))")
    }
}
