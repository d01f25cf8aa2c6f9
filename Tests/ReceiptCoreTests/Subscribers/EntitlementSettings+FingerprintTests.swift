import Entitlements
import Testing

@testable import ReceiptCore

/// Issue 62: a kept document is read only under the settings it was derived with, so their
/// fingerprint must be the same in every process for the same settings, and differ for others.
@Suite("The entitlement settings' fingerprint")
struct EntitlementSettingsFingerprintTests {
    private func settings(
        rules: [String: [String]] = ["pro": ["monthly", "yearly"], "plus": ["weekly"]],
        grandfathering: [String: Grandfathering] = [:], products: [String: Catalog.Kind] = [:],
        policy: DerivationPolicy = DerivationPolicy()
    ) -> EntitlementSettings {
        EntitlementSettings(
            rules: EntitlementRules(rules, grandfathering: grandfathering), catalog: Catalog(products), policy: policy)
    }

    @Test func theSameSettingsHaveOneFingerprintWhateverTheirDictionariesOrder() {
        // Built in other orders, and with many keys (a dictionary's order is its hashing's).
        let many = Dictionary(uniqueKeysWithValues: (0..<200).map { ("e\($0)", ["p\($0)"]) })
        let reversed = Dictionary(uniqueKeysWithValues: (0..<200).reversed().map { ("e\($0)", ["p\($0)"]) })
        #expect(settings(rules: many).fingerprint == settings(rules: reversed).fingerprint)
        #expect(settings().fingerprint == settings(rules: ["plus": ["weekly"], "pro": ["monthly", "yearly"]]).fingerprint)
        // A fixed text, so that a change to how it is written is seen (every kept document would
        // be derived again once).
        #expect(EntitlementSettings.canonicalText(DerivationPolicy()).hasPrefix("Entitlements.DerivationPolicy["))
        #expect(settings().fingerprint.count == 16)
    }

    @Test func anyDifferenceChangesIt() {
        let variants = [
            settings(),
            settings(rules: ["pro": ["yearly", "monthly"], "plus": ["weekly"]]),  // which product grants first
            settings(rules: ["pro": ["monthly", "yearly"]]),
            settings(rules: ["pro": ["monthly", "yearly"], "plus": ["weekly"], "none": []]),
            settings(rules: ["pro": ["monthly", "yearly"], "Plus": ["weekly"]]),
            settings(rules: ["pro": ["monthly", "yearly"], "plus": ["Zo\u{00EB}"]]),
            settings(rules: ["pro": ["monthly", "yearly"], "plus": ["Zoe\u{0308}"]]),  // another spelling
            settings(grandfathering: ["pro": Grandfathering(beforeVersion: "3.0")]),
            settings(grandfathering: ["pro": Grandfathering(beforeVersion: "3.0", platforms: ["iOS"])]),
            settings(grandfathering: ["pro": Grandfathering(beforeVersion: "3.1")]),
            settings(products: ["life": .nonConsumable]),
            settings(products: ["life": .consumable]),
            settings(products: ["pass": .nonRenewing(CalendarDuration(months: 1))]),
            settings(products: ["pass": .nonRenewing(CalendarDuration(days: 30))]),
            settings(policy: DerivationPolicy(billingRetryEntitles: true)),
            settings(policy: DerivationPolicy(familySharedCounts: false)),
        ]
        let prints = variants.map(\.fingerprint)
        #expect(Set(prints).count == variants.count, "\(prints)")
    }
}
