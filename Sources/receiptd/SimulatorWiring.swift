import AppStore
import AppStoreSimulator
import Clocks
import Crypto
import CryptoExtras
import CustomerOffers
import GooglePlaySimulator
import Logging
import ReceiptCore
import ReceiptService

/// The built-in App Store simulator, when `appStore.simulator` is on: offline development, where
/// Apple is a loopback server of our own. The executable wires it; the service only sees URLs.
enum SimulatorWiring {
    /// Starts the simulator on a free loopback port and points `configuration` at it; nil (and
    /// `configuration` unchanged) when the simulator is off.
    static func start(_ configuration: inout ServiceConfiguration, logger: Logger, clock: WallClock = .system) throws
        -> AppStoreSimulator.Served?
    {
        let settings = configuration.appStore
        guard settings.simulator else { return nil }
        let simulator = try AppStoreSimulator.serve(
            configuration: simulated(&configuration), now: clock, logger: logger)
        configuration.appStore.productionURL = simulator.productionURL
        configuration.appStore.sandboxURL = simulator.sandboxURL
        configuration.appStore.serverAPI.productionURL = simulator.serverAPIProductionURL
        configuration.appStore.serverAPI.sandboxURL = simulator.serverAPISandboxURL
        configuration.appStore.allowHTTP = true
        logger.notice("App Store simulator in use; receipts are verified offline", metadata: ["port": "\(simulator.port)"])
        return simulator
    }

    /// Starts the built-in Google Play simulator when `googlePlay.simulator` is on, and points
    /// `configuration` at it: receiptd signs in with a service account key made for this run
    /// (unless one is configured, whose assertions the simulator then checks).
    static func startGooglePlay(_ configuration: inout ServiceConfiguration, logger: Logger, clock: WallClock = .system)
        throws -> GooglePlaySimulator.Served?
    {
        guard configuration.googlePlay.simulator, configuration.googlePlay.isEnabled else { return nil }
        let key = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        let (served, account) = try GooglePlaySimulator.serve(
            packages: configuration.googlePlay.packages, key: key, pushKey: try _RSA.Signing.PrivateKey(keySize: .bits2048),
            clock: clock, logger: logger)
        configuration.googlePlay.useSimulator(
            apiBase: served.apiBase, account: account, pushAudience: GooglePlaySimulator.pushAudience,
            pushAccount: GooglePlaySimulator.pushAccount)
        logger.notice("Google Play simulator in use; purchase tokens are verified offline", metadata: ["port": "\(served.port)"])
        return served
    }

    /// The simulator's settings for `configuration`, and `configuration` made to trust it: the
    /// simulator signs with Apple's test PKI, and checks JWTs of the configured In-App Purchase key
    /// or, when none is configured, of a key made for this run.
    static func simulated(_ configuration: inout ServiceConfiguration) -> AppStoreSimulator.Configuration {
        let settings = configuration.appStore
        let credentials =
            settings.serverAPI.credentials
            ?? ServerAPIToken.Credentials(
                keyID: "SIMULATOR0", issuerID: "00000000-0000-4000-8000-00000000000a", key: P256.Signing.PrivateKey())
        configuration.appStore.serverAPI.credentials = credentials
        // Offers are signed with the In-App Purchase key unless they have their own.
        if configuration.offers.key == nil {
            configuration.offers.key = SignOffer.Key(
                keyID: credentials.keyID, issuerID: credentials.issuerID, key: credentials.key)
        }
        configuration.appStore.signedData.roots.append(SimulatorPKI.root)
        // Its production data names its app's Apple id.
        if !configuration.appStore.signedData.appAppleIDs.contains(ServerAPISimulator.appAppleID) {
            configuration.appStore.signedData.appAppleIDs.append(ServerAPISimulator.appAppleID)
        }
        let apps = settings.simulatedApps
        var simulated = AppStoreSimulator.Configuration(
            bundleID: apps.main, sharedSecret: settings.sharedSecret, serverAPIKey: .init(credentials))
        simulated.otherApps = apps.others.map {
            .init(bundleID: $0.bundleID, sharedSecret: $0.sharedSecret, serverAPIKey: $0.credentials.map { .init($0) })
        }
        return simulated
    }
}
