import AppStore
import DatabaseEngine
import Entitlements
import ReceiptCore
import Storage
import Testing

@testable import StoreCalls

/// What a mass extension request becomes before anything is stored or sent.
@Suite("Mass extensions: the request as stored")
struct MassExtensionsTests {
    static let id = "0F6F2B8E-3C4A-4D8E-9A61-7C2D1E5B9A10"

    static func check(
        _ asked: MassExtensions.Request, bundleIDs: [String] = ["com.x"], environments: [StoreEnvironment] = [.production]
    ) throws(ReceiptError) -> MassExtensionRecord {
        try MassExtensions.validated(asked, by: "key:abc", at: 1_000, bundleIDs: bundleIDs, environments: environments)
    }

    @Test func theAppEnvironmentIdAndStorefrontsAreSettled() throws {
        let r = try Self.check(
            .init(
                productID: "com.x.monthly", storefronts: ["USA", "CAN", "USA"], days: 7, reason: .serviceIssue, requestID: Self.id
            ))
        #expect(r.requestID == Self.id.lowercased() && r.bundleID == "com.x" && r.environment == "production")
        #expect(r.storefronts == ["CAN", "USA"] && r.days == 7 && r.reason == "service_issue")
        #expect(r.requestedBy == "key:abc" && r.requestedAt == 1_000 && r.dueAt == 1_000 && r.status == .submitting)
        let sandbox = try Self.check(
            .init(bundleID: "com.y", environment: .sandbox, productID: "p", days: 1, reason: .other, requestID: Self.id),
            bundleIDs: ["com.x", "com.y"], environments: [.production, .sandbox])
        #expect(sandbox.bundleID == "com.y" && sandbox.environment == "sandbox" && sandbox.storefronts.isEmpty)
    }

    @Test func eachRuleRefusesWithItsOwnError() {
        func refused(
            _ asked: MassExtensions.Request, bundleIDs: [String] = ["com.x"], environments: [StoreEnvironment] = [.production]
        ) -> String? {
            do {
                _ = try Self.check(asked, bundleIDs: bundleIDs, environments: environments)
                return nil
            } catch { return error.code }
        }
        let good = MassExtensions.Request(productID: "monthly", days: 3, reason: .other, requestID: Self.id)
        #expect(refused(good) == nil)
        for product in ["", ".", "..", "a/b", "a b", "é", String(repeating: "a", count: 129)] {
            var bad = good
            bad.productID = product
            #expect(refused(bad) == "invalid_request", "\(product)")
        }
        for days in [0, 91, -1] {
            var bad = good
            bad.days = days
            #expect(refused(bad) == "invalid_request", "\(days)")
        }
        for storefronts in [["usa"], ["US"], ["USAA"], ["U1A"], Array(repeating: "USA", count: 301)] {
            var bad = good
            bad.storefronts = storefronts
            #expect(refused(bad) == "invalid_request", "\(storefronts.prefix(2))")
        }
        var badID = good
        badID.requestID = "nope"
        #expect(refused(badID) == "invalid_request")
        var otherApp = good
        otherApp.bundleID = "com.other"
        #expect(refused(otherApp) == "bundle_mismatch")
        #expect(refused(good, bundleIDs: ["com.x", "com.y"]) == "invalid_request")  // which app?
        var sandbox = good
        sandbox.environment = .sandbox
        #expect(refused(sandbox) == "invalid_request")
    }
}
