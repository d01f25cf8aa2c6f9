import Entitlements
import JSON
import ReceiptTesting
import Testing

@testable import RevenueCatProtocol

/// Config/offerings.json: read strictly, served per platform as both SDKs decode it.
@Suite("Offerings")
struct OfferingsTests {
    let catalog = Catalog(["lifetime": .nonConsumable, "coins_100": .consumable])
    let config = #"""
        {"current": "default", "offerings": [
          {"identifier": "default", "description": "Standard", "metadata": {"layout": "wide"}, "packages": [
            {"identifier": "$rc_monthly", "app_store": "monthly", "play_store": {"product": "premium", "base_plan": "monthly"}},
            {"identifier": "$rc_annual", "play_store": {"product": "premium", "base_plan": "yearly"}},
            {"identifier": "$rc_lifetime", "app_store": "lifetime", "play_store": {"product": "lifetime"}}]},
          {"identifier": "coins", "description": "Coins", "packages": [{"identifier": "coins", "app_store": "coins_100"}]}]}
        """#

    @Test func eachPlatformGetsItsOwnProductsAndOnlyPlaySubscriptionsAPlan() throws {
        let offerings = try Offerings(json: Array(config.utf8), catalog: catalog)
        let apple = offerings.json(for: .appStore)
        #expect(
            String(decoding: apple.jsonBytes, as: UTF8.self)
                == #"{"current_offering_id":"default","offerings":[{"description":"Standard","identifier":"default","metadata":{"layout":"wide"},"packages":[{"identifier":"$rc_monthly","platform_product_identifier":"monthly"},{"identifier":"$rc_lifetime","platform_product_identifier":"lifetime"}]},{"description":"Coins","identifier":"coins","metadata":null,"packages":[{"identifier":"coins","platform_product_identifier":"coins_100"}]}]}"#
        )
        let play = offerings.json(for: .playStore)
        #expect(
            String(decoding: play.jsonBytes, as: UTF8.self)
                == #"{"current_offering_id":"default","offerings":[{"description":"Standard","identifier":"default","metadata":{"layout":"wide"},"packages":[{"identifier":"$rc_monthly","platform_product_identifier":"premium","platform_product_plan_identifier":"monthly"},{"identifier":"$rc_annual","platform_product_identifier":"premium","platform_product_plan_identifier":"yearly"},{"identifier":"$rc_lifetime","platform_product_identifier":"lifetime"}]},{"description":"Coins","identifier":"coins","metadata":null,"packages":[]}]}"#
        )
        for sdk in SDKConformance.SDK.allCases { #expect(SDKConformance.offerings(apple, sdk: sdk) == []) }
        #expect(SDKConformance.offerings(play, sdk: .android) == [])
    }

    @Test func theMappingKeysAPlaySubscriptionByEachBasePlanOffered() throws {
        let offerings = try Offerings(json: Array(config.utf8), catalog: catalog)
        let rules = EntitlementRules(["premium": ["monthly", "premium", "lifetime"], "plus": ["premium"]])
        let play = offerings.entitlementMapping(rules, for: .playStore)
        #expect(
            String(decoding: play.jsonBytes, as: UTF8.self)
                == #"{"product_entitlement_mapping":{"lifetime":{"entitlements":["premium"],"product_identifier":"lifetime"},"monthly":{"entitlements":["premium"],"product_identifier":"monthly"},"premium:monthly":{"base_plan_id":"monthly","entitlements":["plus","premium"],"product_identifier":"premium"},"premium:yearly":{"base_plan_id":"yearly","entitlements":["plus","premium"],"product_identifier":"premium"}}}"#
        )
        let apple = offerings.entitlementMapping(rules, for: .appStore)
        #expect(apple["product_entitlement_mapping"]?["premium"]?["base_plan_id"] == nil)
        #expect(SDKConformance.entitlementMapping(play) == [] && SDKConformance.entitlementMapping(apple) == [])
    }

    @Test func revenueCatsOwnFixturesPassTheConformanceDecoder() throws {
        let offerings = try JSONValue.parse(Fixtures.bytes("RevenueCat/OfferingsWithPlatformProductPlanIdentifier.json"))
        for sdk in SDKConformance.SDK.allCases { #expect(SDKConformance.offerings(offerings, sdk: sdk) == []) }
        let mapping = try JSONValue.parse(Fixtures.bytes("RevenueCat/ProductsEntitlementsWithBasePlanId.json"))
        #expect(SDKConformance.entitlementMapping(mapping) == [])
        #expect(
            SDKConformance.offerings(.object(["offerings": .array([])]), sdk: .android) == [
                "android: current_offering_id is required"
            ])
    }

    @Test(arguments: [
        (#"{"offerings": [], "paywalls": 1}"#, #"unknown member "paywalls""#),
        (
            #"{"offerings": [{"identifier": "a", "description": "A", "packages": []}, {"identifier": "a", "description": "B", "packages": []}]}"#,
            #"offerings[1].identifier "a" is used twice"#
        ),
        (
            #"{"offerings": [{"identifier": "a", "description": "A", "packages": [{"identifier": "p", "play_store": {"product": "premium"}}]}]}"#,
            "offerings[0].packages[0].play_store.base_plan is needed"
        ),
        (
            #"{"offerings": [{"identifier": "a", "description": "A", "packages": [{"identifier": "p"}]}]}"#,
            "offerings[0].packages[0] names no product"
        ),
        (
            #"{"current": "b", "offerings": [{"identifier": "a", "description": "A", "packages": []}]}"#,
            #"current names "b", which is not an offering"#
        ),
        (#"{"offerings": [{"identifier": "a", "packages": []}]}"#, "offerings[0].description must be a non-empty string"),
        (
            #"{"offerings": [{"identifier": "a", "description": "A", "packages": [{"identifier": "p", "app_store": "x"}, {"identifier": "p", "app_store": "y"}]}]}"#,
            #"offerings[0].packages[1].identifier "p" is used twice in a"#
        ),
    ])
    func aConfigurationThatWouldMisleadAnSDKIsRefusedAndSaysWhere(json: String, message: String) {
        #expect {
            try Offerings(json: Array(json.utf8), catalog: catalog)
        } throws: { error in
            (error as? OfferingsError)?.description.contains(message) == true
        }
    }
}
