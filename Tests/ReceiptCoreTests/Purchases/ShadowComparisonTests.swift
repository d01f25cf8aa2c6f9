import JSON
import Testing

@testable import ReceiptCore

@Suite("Shadow comparison: the differences between two documents")
struct ShadowComparisonTests {
    func parse(_ text: String) throws -> JSONValue { try JSONValue.parse(Array(text.utf8)) }

    @Test func equalDocumentsHaveNoDifference() throws {
        let a = try parse(#"{"entitlements":{"pro":{"active":true,"expires_at":"2026-12-01T00:00:00.000Z"}},"x":[1,2]}"#)
        #expect(ShadowComparison.differences(a, a).isEmpty)
        #expect(
            ShadowComparison.differences(
                a, try parse(#"{"x":[1,2],"entitlements":{"pro":{"expires_at":"2026-12-01T00:00:00.000Z","active":true}}}"#)
            ).isEmpty)
    }

    @Test func eachDifferingLeafIsNamedByItsPathInOrder() throws {
        let a = try parse(
            #"{"entitlements":{"pro":{"active":true,"expires_at":"A"}},"non_subscriptions":{"gems":[{"q":1}]},"only_a":1}"#)
        let b = try parse(
            #"{"entitlements":{"pro":{"active":false,"expires_at":"A"}},"non_subscriptions":{"gems":[{"q":1},{"q":2}]},"only_b":null}"#
        )
        let found = ShadowComparison.differences(a, b)
        #expect(found.map(\.path) == ["entitlements.pro.active", "non_subscriptions.gems[1]", "only_a", "only_b"])
        #expect(found[0].verifyReceipt == .bool(true) && found[0].serverAPI == .bool(false))
        // Absent on one side is not the same as null.
        #expect(found[2].serverAPI == nil && found[3].verifyReceipt == nil && found[3].serverAPI == .null)
    }

    @Test func aValueOfAnotherKindDiffersAsAWhole() throws {
        let found = ShadowComparison.differences(try parse(#"{"a":{"b":1}}"#), try parse(#"{"a":[1]}"#))
        #expect(found.map(\.path) == ["a"])
    }
}
