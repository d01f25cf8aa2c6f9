import Testing

@testable import Entitlements

@Suite("Grandfathering: the app got before a version keeps an entitlement for life")
struct GrandfatheringTests {
    static func app(
        _ version: String?, environment: String = "production", platform: String = "iOS", id: String = "704289572311"
    ) -> AppTransaction {
        AppTransaction(
            appTransactionID: id, originalApplicationVersion: version, originalPurchaseDate: 1_600_000_000_000,
            originalPlatform: platform, environment: environment)
    }

    @Test(
        arguments: [
            ("2.9", "2.10", -1), ("2.10", "2.9", 1), ("3", "3.0", 0), ("3.0.1", "3.0", 1), ("412", "500", -1),
            ("1.0", "1", 0), ("2.x", "3.0", nil), ("", "3.0", nil), ("1..2", "3.0", nil), ("1.2.3.4.5.6", "3", nil),
            ("9999999999", "3", nil),
        ] as [(String, String, Int?)])
    func versionsCompareAsDottedNumbers(_ a: String, _ b: String, _ expected: Int?) {
        #expect(AppVersion.compare(a, b) == expected)
    }

    @Test func onlyAProductionAppTransactionFromBeforeTheVersionQualifies() {
        let rule = Grandfathering(beforeVersion: "3.0")
        #expect(rule.holds(for: Self.app("2.1")) == (true, "it was first got at version 2.1, before 3.0"))
        #expect(rule.holds(for: Self.app("3.0")).0 == false)
        #expect(rule.holds(for: Self.app("10.0")).0 == false)
        // The sandbox always says 1.0: it grants nothing.
        #expect(rule.holds(for: Self.app("1.0", environment: "sandbox")).1.contains("always 1.0"))
        #expect(rule.holds(for: Self.app(nil)).0 == false && rule.holds(for: Self.app("beta")).0 == false)
        let iOSOnly = Grandfathering(beforeVersion: "3.0", platforms: ["iOS"])
        #expect(iOSOnly.holds(for: Self.app("2.0", platform: "macOS")).0 == false)
        #expect(iOSOnly.holds(for: Self.app("2.0", platform: "iOS")).0)
    }

    @Test func theGrantIsForLifeExplainedAndWinsOverASubscription() {
        let rules = EntitlementRules(["pro": ["monthly"]], grandfathering: ["pro": Grandfathering(beforeVersion: "3.0")])
        let now: Int64 = 1_795_000_000_000
        let granted = rules.grants(subscriptions: [], purchases: [], appTransactions: [Self.app("2.1")], now: now)
        let pro = granted["pro"]
        #expect(pro?.isActive == true && pro?.explanation.rule == "grandfathered")
        #expect(pro?.explanation.decision.hasPrefix("Granted for life: it was first got at version 2.1, before 3.0") == true)
        #expect(pro?.explanation.facts.contains(Fact("original_application_version", .text("2.1"))) == true)
        // Got at 3.0 or later: nothing to grant without a purchase.
        #expect(rules.grants(subscriptions: [], purchases: [], appTransactions: [Self.app("3.0")], now: now)["pro"] == nil)
        // A subscription that entitles too: the lifetime grant is the one shown.
        let facts = Facts(
            purchases: [
                Purchase(
                    transactionID: "t1", originalTransactionID: "o1", productID: "monthly", purchaseDate: now - 1_000,
                    expiresDate: now + 86_400_000)
            ], appTransactions: [Self.app("2.1")])
        let subs = Derivation.subscriptions(facts, now: now)
        let both = rules.grants(subscriptions: subs, purchases: [], appTransactions: facts.appTransactions, now: now)
        #expect(both["pro"]?.explanation.rule == "grandfathered")
        #expect(both["pro"]?.explanation.facts.contains(Fact("candidates", .number(2))) == true)
        // Another entitlement with no rule is not touched.
        #expect(both.count == 1)
    }
}
