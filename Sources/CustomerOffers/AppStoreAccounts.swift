package import AppStore
import ReceiptCore

/// The App Store Connect accounts whose apps receiptd serves, each with its own secrets: the
/// shared secret verifyReceipt and V1 notifications use, the In-App Purchase key the App Store
/// Server API and offer signatures use. Teams and agencies whose apps live in different accounts
/// run one receiptd; each app's requests carry its own account's secrets, and never another's.
///
/// One account is the default (`appStore.sharedSecret`, `appStore.serverApi.*`): it holds every
/// configured app no named account (`appStore.accounts`) claims. Pure: no I/O.
package struct AppStoreAccounts: Sendable {
    package struct Account: Sendable {
        /// `default`, or the name under `appStore.accounts`.
        package var name: String
        package var bundleIDs: [String]
        package var sharedSecret: String?
        package var serverAPI: ServerAPIToken.Credentials?
        /// The key offers are signed with: `appStore.offers.*` for the default account when set,
        /// else the account's In-App Purchase key.
        package var offerKey: SignOffer.Key?

        package init(
            name: String, bundleIDs: [String], sharedSecret: String? = nil, serverAPI: ServerAPIToken.Credentials? = nil,
            offerKey: SignOffer.Key? = nil
        ) {
            self.name = name
            self.bundleIDs = bundleIDs
            self.sharedSecret = sharedSecret
            self.serverAPI = serverAPI
            self.offerKey = offerKey
        }
    }

    /// The default account first (when it holds an app), then the named ones.
    package let accounts: [Account]
    /// Every app, in the configured order.
    private let apps: [String]
    private let byApp: [String: Int]

    /// `bundleIDs` are every configured app; `named` claim some (each app at most once, each one
    /// configured: the configuration checks both); the default account holds the rest.
    package init(bundleIDs: [String], default base: Account, named: [Account] = []) {
        let claimed = Set(named.flatMap(\.bundleIDs))
        var base = base
        base.bundleIDs = bundleIDs.filter { !claimed.contains($0) }
        accounts = (base.bundleIDs.isEmpty ? [] : [base]) + named
        apps = bundleIDs
        var byApp: [String: Int] = [:]
        for (i, account) in accounts.enumerated() {
            for app in account.bundleIDs { byApp[app] = i }
        }
        self.byApp = byApp
    }

    /// One account holding every app, with these secrets (what a configuration without
    /// `appStore.accounts` is).
    package init(
        bundleIDs: [String], sharedSecret: String?, serverAPI: ServerAPIToken.Credentials?, offerKey: SignOffer.Key? = nil
    ) {
        self.init(
            bundleIDs: bundleIDs,
            default: Account(
                name: "default", bundleIDs: bundleIDs, sharedSecret: sharedSecret, serverAPI: serverAPI,
                offerKey: offerKey ?? serverAPI.map { SignOffer.Key(keyID: $0.keyID, issuerID: $0.issuerID, key: $0.key) }))
    }

    /// The account `bundleID` belongs to; nil for an app receiptd does not serve.
    package func account(of bundleID: String) -> Account? { byApp[bundleID].map { accounts[$0] } }

    /// The shared secret a V1 notification about `bundleID` must carry: its account's. For an app
    /// receiptd does not serve, the single account's when there is one (so the right secret hears
    /// `wrong_app`), none with several.
    package func sharedSecret(of bundleID: String) -> String? {
        if let account = account(of: bundleID) { return account.sharedSecret }
        return accounts.count == 1 ? accounts[0].sharedSecret : nil
    }
    package func serverAPICredentials(of bundleID: String) -> ServerAPIToken.Credentials? { account(of: bundleID)?.serverAPI }
    package func offerKey(of bundleID: String) -> SignOffer.Key? { account(of: bundleID)?.offerKey }

    /// Whether any account can call the App Store Server API.
    package var hasServerAPI: Bool { accounts.contains { $0.serverAPI != nil } }

    /// The apps whose account has an In-App Purchase key, in the configured order: those the
    /// Server API can be asked about when every app is (notification history, an order lookup).
    package var serverAPIApps: [String] { apps.filter { serverAPICredentials(of: $0) != nil } }

    /// The shared secret to send with an app receipt to verifyReceipt: its app's account's, the
    /// app read from the receipt itself (``AppReceipt/bundleID(base64:)``). A receipt that names
    /// no app receiptd can read, or an app it does not serve, gets the secret only when a single
    /// account holds every app (as before accounts existed); with several, none rather than a guess
    /// that would hand one account's secret to another's receipt.
    package func sharedSecret(forReceipt receiptData: String) -> String? {
        // One account: its secret, whatever the receipt names (nothing to parse on this hot path).
        if accounts.count == 1 { return accounts[0].sharedSecret }
        if let bundle = (try? AppReceipt.bundleID(base64: receiptData)) ?? nil, let account = account(of: bundle) {
            return account.sharedSecret
        }
        return nil
    }
}
