import AppStoreServerAPI
import AppStoreSimulator
import Clocks
import Crypto
import Logging
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
        configuration.appStore.signedData.roots.append(SimulatorPKI.root)
        return AppStoreSimulator.Configuration(
            bundleID: settings.bundleIDs[0], sharedSecret: settings.sharedSecret,
            serverAPIKey: .init(credentials))
    }
}
