import Foundation
import ReceiptTesting
import RevenueCatProtocol
import Testing

@testable import ReceiptService

/// `revenueCat.*` and `offerings.file`, from the configuration text to what the listener serves.
@Suite("RevenueCat settings")
struct RevenueCatSettingsTests {
    @Test func theListenerIsOffUntilAPortIsSetAndTheShippedOfferingsAreRead() async throws {
        let dir = try makeConfigDirectory(["default.json": "{}"])
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let off = try await ServiceConfiguration.load(configDirectory: dir, environment: [:]).0
        #expect(off.revenueCat.port == nil && off.revenueCat.keys.isEmpty && off.revenueCat.offerings == Offerings())
        // Config/products.json says which of its products are one-time (a Play one needs no base plan).
        for file in ["offerings.json", "products.json"] {
            try FileManager.default.copyItem(atPath: configDirectory + "/" + file, toPath: dir + "/" + file)
        }
        let on = try await ServiceConfiguration.load(
            configDirectory: dir,
            environment: ["RECEIPTD_REVENUE_CAT_PORT": "8181", "RECEIPTD_REVENUE_CAT_KEYS": "appl_a, goog_b,mac_c"]
        ).0
        #expect(on.revenueCat.port == 8181)
        #expect(on.revenueCat.keys == ["appl_a", "goog_b", "mac_c"])
        #expect(on.revenueCat.offerings.current == "default" && on.revenueCat.offerings.offerings.count == 2)
    }

    @Test func aKeyWithoutItsStoresPrefixOrAMisleadingOfferingStopsStartUp() async throws {
        let dir = try makeConfigDirectory([
            "default.json": "{}",
            "offerings.json":
                #"{"offerings": [{"identifier": "a", "description": "A", "packages": [{"identifier": "p", "play_store": {"product": "monthly"}}]}]}"#,
        ])
        defer { try? FileManager.default.removeItem(atPath: dir) }
        await #expect {
            _ = try await ServiceConfiguration.load(configDirectory: dir, environment: [:])
        } throws: { error in
            let error = error as? ConfigurationError
            return error?.key == "offerings.file" && error?.message.contains("base_plan is needed") == true
        }
        try FileManager.default.removeItem(atPath: dir + "/offerings.json")
        await #expect {
            _ = try await ServiceConfiguration.load(
                configDirectory: dir, environment: ["RECEIPTD_REVENUE_CAT_KEYS": "appl_a,sk_live_b"])
        } throws: { error in
            let error = error as? ConfigurationError
            // The message never repeats a key.
            return error?.key == "revenueCat.keys" && error?.message.contains("sk_live_b") == false
        }
    }

    @Test func aKeysPrefixNamesItsStore() {
        #expect(SDKKeys.platform(ofKey: "appl_x") == .appStore && SDKKeys.platform(ofKey: "mac_x") == .appStore)
        #expect(SDKKeys.platform(ofKey: "goog_x") == .playStore)
        #expect(SDKKeys.platform(ofKey: "amzn_x") == nil && SDKKeys.platform(ofKey: "appl") == nil)
    }
}
