import JSON
import Testing

@testable import RevenueCatProtocol

/// Attributes as the SDKs post them: each taken or refused on its own.
@Suite("Attributes")
struct AttributesTests {
    @Test func eachAttributeIsTakenOrRefusedOnItsOwn() throws {
        let body = try JSONValue.parse(
            Array(
                #"""
                {"attributes": {
                  "$email": {"value": "not an email", "updated_at_ms": 1700000000000},
                  "$displayName": {"value": "Ana", "updated_at_ms": 1700000000001},
                  "plan_tier": {"value": null, "updated_at_ms": 1700000000002},
                  "no_time": {"value": "x"},
                  "number": {"value": 5, "updated_at_ms": 1}}}
                """#.utf8))
        let (taken, refused) = try Attributes.read(body)
        #expect(
            taken == [
                .init(name: "$displayName", value: "Ana", updatedAt: 1_700_000_000_001),
                .init(name: "plan_tier", value: nil, updatedAt: 1_700_000_000_002),
            ])
        #expect(refused.map(\.key) == ["$email", "no_time", "number"])
        #expect(refused.first?.message == "Email address is not a valid email.")
    }

    @Test func aBodyWithoutAttributesIs7264() {
        #expect(throws: SDKError.self) { try Attributes.read(.object([:])) }
        do {
            _ = try Attributes.read(.object(["attributes": .array([])]))
        } catch {
            #expect(error.code == 7264 && error.status == 400)
        }
    }

    @Test(arguments: [
        ("a@b.co", true), ("ana@example.com", true), ("a@b", false), ("@b.co", false), ("a b@c.de", false), ("a@.de", false),
        ("a@b.", false),
    ])
    func anEmailHasALocalPartAndADottedDomain(text: String, valid: Bool) {
        #expect(Attributes.isEmail(text) == valid)
    }
}
