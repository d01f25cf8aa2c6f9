import AppStore
import Crypto
import ReceiptTesting
import Testing

@testable import CustomerOffers

/// Which account's secrets go with which app: each app its own account's, never another's.
@Suite("App Store accounts")
struct AppStoreAccountsTests {
    static let xcodeApp = "com.example.naturelab.backyardbirds.example"
    static let agencyKey = ServerAPIToken.Credentials(keyID: "AGENCY0001", issuerID: "agency", key: P256.Signing.PrivateKey())

    static let accounts = AppStoreAccounts(
        bundleIDs: ["com.example.app", xcodeApp, "com.agency.two"],
        default: .init(
            name: "default", bundleIDs: [], sharedSecret: "default-secret", serverAPI: TestSecrets.serverAPICredentials),
        named: [
            .init(name: "agency", bundleIDs: [xcodeApp, "com.agency.two"], sharedSecret: "agency-secret", serverAPI: agencyKey)
        ])

    @Test func eachAppHasItsAccountsSecretsOnly() {
        let a = Self.accounts
        #expect(a.accounts.map(\.name) == ["default", "agency"])
        #expect(a.account(of: "com.example.app")?.bundleIDs == ["com.example.app"])
        #expect(a.sharedSecret(of: "com.example.app") == "default-secret")
        #expect(a.sharedSecret(of: Self.xcodeApp) == "agency-secret")
        #expect(a.serverAPICredentials(of: "com.agency.two")?.keyID == "AGENCY0001")
        #expect(a.serverAPICredentials(of: "com.example.app")?.keyID == TestSecrets.serverAPICredentials.keyID)
        // An app receiptd does not serve: no account, so no secret with several accounts.
        #expect(a.account(of: "com.other") == nil && a.sharedSecret(of: "com.other") == nil)
        #expect(a.serverAPICredentials(of: "com.other") == nil)
        #expect(a.hasServerAPI)
        #expect(a.serverAPIApps == ["com.example.app", Self.xcodeApp, "com.agency.two"])
        let keyless = AppStoreAccounts(
            bundleIDs: ["com.a", "com.b"], default: .init(name: "default", bundleIDs: [], serverAPI: Self.agencyKey),
            named: [.init(name: "nokey", bundleIDs: ["com.a"], sharedSecret: "s")])
        #expect(keyless.serverAPIApps == ["com.b"])
    }

    @Test func aReceiptGetsTheSecretOfTheAppItNames() {
        let xcode = Fixtures.text("AppStoreServerAPI/xcode-app-receipt-with-transaction")
        #expect(Self.accounts.sharedSecret(forReceipt: xcode) == "agency-secret")
        // A receipt naming no app receiptd can read gets no secret rather than a guess…
        let unreadable = "YWN0aXZlX21vbnRobHk6dGFn"  // "active_monthly:tag"
        #expect(Self.accounts.sharedSecret(forReceipt: unreadable) == nil)
        // … unless one account holds every app, as before accounts existed.
        let one = AppStoreAccounts(bundleIDs: ["com.example.app"], sharedSecret: "only", serverAPI: nil)
        #expect(one.sharedSecret(forReceipt: unreadable) == "only" && one.sharedSecret(forReceipt: xcode) == "only")
        #expect(one.sharedSecret(of: "com.stranger") == "only")
        #expect(!one.hasServerAPI && one.offerKey(of: "com.example.app") == nil)
    }

    @Test func anAccountClaimingEveryAppLeavesTheDefaultOut() {
        let all = AppStoreAccounts(
            bundleIDs: ["com.a"], default: .init(name: "default", bundleIDs: [], sharedSecret: "unused"),
            named: [.init(name: "x", bundleIDs: ["com.a"], sharedSecret: "x-secret")])
        #expect(all.accounts.map(\.name) == ["x"] && all.sharedSecret(forReceipt: "bm9wZQ==") == "x-secret")
    }
}
